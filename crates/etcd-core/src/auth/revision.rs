//! etcd's auth revision, from its `AuthStatus` request (etcd 3.5 and later), which the
//! etcd-client crate does not send: one unary call on the endpoint's own connection, with the
//! two messages it needs declared here (etcd's `rpc.proto`: `AuthStatusRequest {}` and
//! `AuthStatusResponse { header = 1; enabled = 2; authRevision = 3 }`).

use http::uri::PathAndQuery;
use tonic::metadata::MetadataValue;

use crate::config::{Credentials, Secret};
use crate::connect::EndpointClient;

/// `etcdserverpb.AuthStatusRequest`: no fields.
#[derive(Clone, PartialEq, prost::Message)]
struct AuthStatusRequest {}

/// `etcdserverpb.AuthStatusResponse`, without the header (an unknown field to this decoder).
#[derive(Clone, PartialEq, prost::Message)]
struct AuthStatusResponse {
    /// Whether authentication is enabled.
    #[prost(bool, tag = "2")]
    enabled: bool,
    /// The auth store's revision.
    #[prost(uint64, tag = "3")]
    auth_revision: u64,
}

/// The auth revision `client`'s member reports; `None` when it cannot say (etcd 3.4 has no
/// such request, or the request failed or took longer than a command may). With auth
/// enabled etcd wants a token: the user's own (`jwt`), or one asked for with `credentials`
/// (etcd-client keeps its own to itself).
pub(crate) async fn auth_revision(
    client: &EndpointClient,
    credentials: Option<&Credentials>,
    jwt: Option<&Secret>,
) -> Option<u64> {
    let mut grpc = tonic::client::Grpc::new(client.channel());
    let call = async {
        let mut request = tonic::Request::new(AuthStatusRequest {});
        if let Some(token) = jwt {
            let token = MetadataValue::try_from(token.expose()).ok()?;
            request.metadata_mut().insert("token", token);
        } else if let Some(credentials) = credentials {
            let answer = client
                .raw()
                .auth_client()
                .authenticate(
                    credentials.user.clone(),
                    credentials.password.expose().into(),
                )
                .await;
            // Authentication not enabled: no token needed.
            if let Ok(answer) = answer {
                let token = MetadataValue::try_from(answer.token()).ok()?;
                request.metadata_mut().insert("token", token);
            }
        }
        grpc.ready().await.ok()?;
        let codec = tonic_prost::ProstCodec::<AuthStatusRequest, AuthStatusResponse>::default();
        let path = PathAndQuery::from_static("/etcdserverpb.Auth/AuthStatus");
        let response = grpc.unary(request, path, codec).await.ok()?;
        Some(response.into_inner().auth_revision)
    };
    tokio::time::timeout(client.command_timeout(), call)
        .await
        .ok()
        .flatten()
}
