//! Test certificates, generated per test run: no private key is ever committed.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

/// PEM files for a TLS cluster, written into one directory.
#[derive(Debug, Clone)]
pub struct Certs {
    /// CA that signs the server and client certificates.
    pub ca: PathBuf,
    /// Server certificate for 127.0.0.1 and localhost.
    pub server_cert: PathBuf,
    /// Server key.
    pub server_key: PathBuf,
    /// Client certificate (CN=root) signed by `ca`.
    pub client_cert: PathBuf,
    /// Client key.
    pub client_key: PathBuf,
    /// A CA that signed nothing etcd trusts.
    pub other_ca: PathBuf,
    /// A client certificate signed by `other_ca`, which etcd must reject.
    pub rogue_client_cert: PathBuf,
    /// Its key.
    pub rogue_client_key: PathBuf,
    /// The CA's key (PEM), kept to sign host certificates later ([`Certs::host_cert`]).
    ca_key: String,
    /// Where the files live.
    dir: PathBuf,
}

fn ca_params(name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A host's own server certificate (its node address and name as SANs, server and client
/// use, so that etcd can also present it to its peers), signed by the test CA.
#[derive(Debug, Clone)]
pub struct HostCert {
    /// The certificate.
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
}

fn leaf_params(cn: &str, server: bool) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("empty SAN list is valid");
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    params.distinguished_name = dn;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    if server {
        params.subject_alt_names = vec![
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::DnsName("localhost".try_into().expect("valid DNS name")),
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
    } else {
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    }
    params
}

fn write(dir: &Path, name: &str, pem: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).expect("write test certificate");
    path
}

impl Certs {
    /// Generates a CA, server and client certificates, and a rogue CA with its own client
    /// certificate, into `dir`.
    pub fn generate(dir: &Path) -> Certs {
        std::fs::create_dir_all(dir).expect("create cert dir");
        let ca_key = KeyPair::generate().expect("generate CA key");
        let ca_cert = ca_params("etcdops test CA")
            .self_signed(&ca_key)
            .expect("self-sign CA");
        let issuer = Issuer::new(ca_params("etcdops test CA"), ca_key);

        let other_key = KeyPair::generate().expect("generate other CA key");
        let other_cert = ca_params("unrelated CA")
            .self_signed(&other_key)
            .expect("self-sign other CA");
        let other_issuer = Issuer::new(ca_params("unrelated CA"), other_key);

        let server_key = KeyPair::generate().expect("server key");
        let server_cert = leaf_params("etcd", true)
            .signed_by(&server_key, &issuer)
            .expect("sign server cert");
        let client_key = KeyPair::generate().expect("client key");
        let client_cert = leaf_params("root", false)
            .signed_by(&client_key, &issuer)
            .expect("sign client cert");
        let rogue_key = KeyPair::generate().expect("rogue key");
        let rogue_cert = leaf_params("root", false)
            .signed_by(&rogue_key, &other_issuer)
            .expect("sign rogue cert");

        Certs {
            ca_key: issuer.key().serialize_pem(),
            dir: dir.to_path_buf(),
            ca: write(dir, "ca.pem", &ca_cert.pem()),
            server_cert: write(dir, "server.pem", &server_cert.pem()),
            server_key: write(dir, "server-key.pem", &server_key.serialize_pem()),
            client_cert: write(dir, "client.pem", &client_cert.pem()),
            client_key: write(dir, "client-key.pem", &client_key.serialize_pem()),
            other_ca: write(dir, "other-ca.pem", &other_cert.pem()),
            rogue_client_cert: write(dir, "rogue.pem", &rogue_cert.pem()),
            rogue_client_key: write(dir, "rogue-key.pem", &rogue_key.serialize_pem()),
        }
    }

    /// A server certificate for one host, naming `ip` and `name` as a real member's names its
    /// node address, signed by this CA; written as `<name>.pem` and `<name>-key.pem`. It also
    /// names 127.0.0.1: a loopback connection to a peer leaves from 127.0.0.1, and etcd's
    /// peer client-certificate check compares the source address with the SANs (no member
    /// listens on 127.0.0.1, so no client reaches one there).
    pub fn host_cert(&self, name: &str, ip: IpAddr) -> HostCert {
        let ca_key = KeyPair::from_pem(&self.ca_key).expect("read the test CA key");
        let issuer = Issuer::new(ca_params("etcdops test CA"), ca_key);
        let key = KeyPair::generate().expect("host key");
        let mut params = leaf_params(name, true);
        params.subject_alt_names = vec![
            SanType::IpAddress(ip),
            SanType::IpAddress([127, 0, 0, 1].into()),
            SanType::DnsName(name.try_into().expect("valid DNS name")),
        ];
        let cert = params.signed_by(&key, &issuer).expect("sign host cert");
        HostCert {
            cert: write(&self.dir, &format!("{name}.pem"), &cert.pem()),
            key: write(&self.dir, &format!("{name}-key.pem"), &key.serialize_pem()),
        }
    }
}
