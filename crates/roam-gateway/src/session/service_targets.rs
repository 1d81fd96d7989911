//! The services a gateway's clients call: an edge service client per service, with its
//! request and reply types' codecs, created on first use and cached per session.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use roam_edge::ros_names::full_name;
use roam_edge::{ServiceClient, ServiceRef, SubscriberOptions, TopicRef};
use roam_msg::MessageType;
use roam_proto::directory::{ItemKind, Role};

use super::{Input, SessionError};
use crate::listing::Listed;
use crate::Gateway;

/// The service clients of one session, shared with its call tasks.
#[derive(Clone)]
pub struct ServiceTargets {
    gw: Arc<Gateway>,
    cache: TargetCache,
}

/// A session's service targets by service name.
pub(super) type TargetCache = Arc<tokio::sync::Mutex<HashMap<String, Arc<ServiceTarget>>>>;

/// A service of the realm, ready to call: its edge client and its types' codecs.
pub struct ServiceTarget {
    client: ServiceClient,
    request: MessageType,
    reply: MessageType,
    _listed: Listed,
}

impl ServiceTargets {
    /// The targets of one session, cached in `cache` (the session's own).
    pub(super) fn for_session(gw: Arc<Gateway>, cache: TargetCache) -> Self {
        Self { gw, cache }
    }

    /// Targets not cached by any session (for looking up codecs).
    pub fn for_gateway(gw: Arc<Gateway>) -> Self {
        Self {
            gw,
            cache: Default::default(),
        }
    }

    /// The target for `service` (type from `ros_type` or the realm's directory), created on
    /// first use and kept (a bounded number).
    pub async fn get(
        &self,
        service: &str,
        ros_type: Option<&str>,
    ) -> Result<Arc<ServiceTarget>, SessionError> {
        let name = full_name(service)?.name;
        if let Some(t) = self.cache.lock().await.get(&name) {
            return Ok(t.clone());
        }
        let srv_type = match ros_type {
            Some(t) => t.to_string(),
            None => self
                .gw
                .realm_listing()
                .services
                .into_iter()
                .find(|s| s.name == name)
                .and_then(|s| s.types.into_iter().next())
                .ok_or_else(|| SessionError::UnknownType(name.clone()))?,
        };
        let mut sref = ServiceRef::new(self.gw.realm.clone(), &name, &srv_type)?;
        let request = self
            .codec(&sref.request_topic(), &sref.request_type())
            .await?;
        let reply = self.codec(&sref.reply_topic(), &sref.reply_type()).await?;
        sref.request_definition = request.1;
        sref.reply_definition = reply.1;
        let client = self
            .gw
            .edge
            .service_client(&sref, Default::default())
            .await
            .map_err(|source| SessionError::Edge {
                topic: name.clone(),
                source,
            })?;
        let listed = self
            .gw
            .listing
            .add(ItemKind::Service, Role::Imports, &name, &sref.srv_type);
        let target = Arc::new(ServiceTarget {
            client,
            request: request.0,
            reply: reply.0,
            _listed: listed,
        });
        let mut cache = self.cache.lock().await;
        if cache.len() >= self.gw.limits.max_topics_per_client {
            // Forget an arbitrary one: its calls in flight keep their own handle.
            if let Some(k) = cache.keys().next().cloned() {
                cache.remove(&k);
            }
        }
        cache.insert(name, target.clone());
        Ok(target)
    }

    /// A type's codec (and its text when local): this machine's, else announced on `topic`.
    pub async fn codec(
        &self,
        topic: &TopicRef,
        dds_type: &str,
    ) -> Result<(MessageType, Option<String>), SessionError> {
        if let Some((t, text)) = self.gw.codecs.local(dds_type).await {
            return Ok((t, Some(text.to_string())));
        }
        let options = SubscriberOptions {
            announcements_only: true,
            ..SubscriberOptions::default()
        };
        let mut sub = self.gw.edge.subscriber(topic, options).await;
        match crate::codec::announced(
            &mut sub,
            dds_type,
            self.gw.limits.definition_wait,
            |_, _| {},
        )
        .await
        {
            Ok(t) => {
                if let Some(text) = sub.definition(dds_type) {
                    self.gw.codecs.learn(dds_type, t.clone(), text);
                }
                Ok((t, None))
            }
            Err(_) => Err(SessionError::NoDefinition(
                roam_edge::ros_names::type_from_dds(dds_type),
            )),
        }
    }
}

impl ServiceTarget {
    /// Calls the service with a request body; the reply as JSON.
    pub async fn call(
        &self,
        args: Option<Input<'_>>,
        timeout: Duration,
    ) -> Result<Vec<u8>, SessionError> {
        let reply = self.call_cdr(args, timeout).await?;
        let service = self.client.service().service.clone();
        let mut json = Vec::new();
        self.reply
            .cdr_to_json(&reply, &mut json)
            .map_err(|source| SessionError::BadReply { service, source })?;
        Ok(json)
    }

    /// Calls the service with a request body; the reply's CDR as the server sent it.
    pub async fn call_cdr(
        &self,
        args: Option<Input<'_>>,
        timeout: Duration,
    ) -> Result<Vec<u8>, SessionError> {
        let mut cdr = Vec::new();
        let args = args.unwrap_or(Input::Json(b"{}"));
        args.to_cdr(&self.request, &mut cdr)
            .map_err(|source| SessionError::Encode {
                topic: self.client.service().service.clone(),
                type_name: self.request.name().full(),
                source,
            })?;
        Ok(self.client.call(&cdr, timeout).await?)
    }

    /// The request type's field names in order (for args given as a list).
    pub fn request_fields(&self) -> Vec<String> {
        self.request.field_names().map(str::to_string).collect()
    }
}
