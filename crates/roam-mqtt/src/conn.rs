//! One face over rumqttc's MQTT 3.1.1 (`v4`) and MQTT 5 (`v5`) clients, which have the same
//! shape but their own types: the client shell ([`crate::client`]) is written once against
//! [`Api`] and [`Loop`].

use std::time::Duration;

use bytes::Bytes;
use rumqttc::v5::mqttbytes::v5 as p5;
use rumqttc::Outgoing;

use crate::client::{Connect, DEFAULT_MAX_PACKET};
use crate::params::{MqttQos, MqttVersion};

/// The requests side.
#[derive(Clone)]
pub enum Api {
    V4(rumqttc::AsyncClient),
    V5(rumqttc::v5::AsyncClient),
}

/// The connection side, polled by the shell's task.
pub enum Loop {
    V4(Box<rumqttc::EventLoop>),
    V5(Box<rumqttc::v5::EventLoop>),
}

/// What the connection reports, whichever the version.
pub enum Ev {
    ConnAck {
        session_present: bool,
    },
    Publish {
        topic: String,
        payload: Bytes,
        retain: bool,
    },
    /// The broker has a QoS 1 (PUBACK) or QoS 2 (PUBREC) publication of ours.
    Acked(u16),
    /// A publication of ours was written, with this packet id (0 for QoS 0).
    Written(u16),
    /// We said goodbye.
    Disconnected,
    Other,
}

fn q4(q: MqttQos) -> rumqttc::QoS {
    match q {
        MqttQos::AtMostOnce => rumqttc::QoS::AtMostOnce,
        MqttQos::AtLeastOnce => rumqttc::QoS::AtLeastOnce,
        MqttQos::ExactlyOnce => rumqttc::QoS::ExactlyOnce,
    }
}

fn q5(q: MqttQos) -> rumqttc::v5::mqttbytes::QoS {
    use rumqttc::v5::mqttbytes::QoS;
    match q {
        MqttQos::AtMostOnce => QoS::AtMostOnce,
        MqttQos::AtLeastOnce => QoS::AtLeastOnce,
        MqttQos::ExactlyOnce => QoS::ExactlyOnce,
    }
}

/// A client of `c.version`, with `REQUESTS` requests queued at most.
pub(crate) fn build(c: &Connect, requests: usize) -> (Api, Loop) {
    let transport = c.tls.as_ref().map(|config| {
        rumqttc::Transport::tls_with_config(rumqttc::TlsConfiguration::Rustls(config.clone()))
    });
    let keep_alive = c.keep_alive.max(Duration::from_secs(1));
    match c.version {
        MqttVersion::V311 => {
            let mut o = rumqttc::MqttOptions::new(c.id.clone(), c.host.clone(), c.port);
            o.set_keep_alive(keep_alive);
            o.set_clean_session(c.clean_session);
            o.set_inflight(c.max_inflight.max(1));
            o.set_max_packet_size(DEFAULT_MAX_PACKET, DEFAULT_MAX_PACKET);
            if let Some((user, pass)) = &c.user {
                o.set_credentials(user.clone(), pass.clone());
            }
            if let Some(w) = &c.last_will {
                o.set_last_will(rumqttc::LastWill::new(
                    w.topic.clone(),
                    w.message.clone().into_bytes(),
                    q4(w.qos),
                    w.retained,
                ));
            }
            if let Some(t) = transport {
                o.set_transport(t);
            }
            let (api, mut lp) = rumqttc::AsyncClient::new(o, requests);
            lp.network_options.set_tcp_nodelay(true);
            (Api::V4(api), Loop::V4(Box::new(lp)))
        }
        MqttVersion::V5 => {
            let mut o = rumqttc::v5::MqttOptions::new(c.id.clone(), c.host.clone(), c.port);
            o.set_keep_alive(keep_alive);
            o.set_clean_start(c.clean_session);
            if !c.clean_session {
                // MQTT 5 ends a session with its connection unless it is given a lifetime.
                o.set_session_expiry_interval(Some(3600));
            }
            o.set_outgoing_inflight_upper_limit(c.max_inflight.max(1));
            o.set_max_packet_size(Some(DEFAULT_MAX_PACKET as u32));
            if let Some((user, pass)) = &c.user {
                o.set_credentials(user.clone(), pass.clone());
            }
            if let Some(w) = &c.last_will {
                o.set_last_will(p5::LastWill::new(
                    w.topic.clone(),
                    w.message.clone().into_bytes(),
                    q5(w.qos),
                    w.retained,
                    None,
                ));
            }
            if let Some(t) = transport {
                o.set_transport(t);
            }
            o.set_network_options(nodelay());
            let (api, lp) = rumqttc::v5::AsyncClient::new(o, requests);
            (Api::V5(api), Loop::V5(Box::new(lp)))
        }
    }
}

impl Api {
    /// Queues a publication; `Err` when the request queue is full.
    pub(crate) fn try_publish(
        &self,
        topic: String,
        qos: MqttQos,
        retain: bool,
        payload: Vec<u8>,
    ) -> Result<(), ()> {
        match self {
            Api::V4(c) => c
                .try_publish(topic, q4(qos), retain, payload)
                .map_err(|_| ()),
            Api::V5(c) => c
                .try_publish(topic, q5(qos), retain, payload)
                .map_err(|_| ()),
        }
    }

    pub(crate) fn try_subscribe(&self, topic: String, qos: MqttQos) -> Result<(), String> {
        match self {
            Api::V4(c) => c.try_subscribe(topic, q4(qos)).map_err(|e| e.to_string()),
            Api::V5(c) => c.try_subscribe(topic, q5(qos)).map_err(|e| e.to_string()),
        }
    }

    pub(crate) fn try_unsubscribe(&self, topic: String) {
        let _ = match self {
            Api::V4(c) => c.try_unsubscribe(topic).map_err(|_| ()),
            Api::V5(c) => c.try_unsubscribe(topic).map_err(|_| ()),
        };
    }

    pub(crate) async fn disconnect(&self) {
        let _ = match self {
            Api::V4(c) => c.disconnect().await.map_err(|_| ()),
            Api::V5(c) => c.disconnect().await.map_err(|_| ()),
        };
    }
}

impl Loop {
    pub(crate) async fn poll(&mut self) -> Result<Ev, String> {
        match self {
            Loop::V4(l) => {
                use rumqttc::{Event, Incoming};
                Ok(match l.poll().await.map_err(|e| e.to_string())? {
                    Event::Incoming(Incoming::ConnAck(a)) => Ev::ConnAck {
                        session_present: a.session_present,
                    },
                    Event::Incoming(Incoming::Publish(p)) => Ev::Publish {
                        topic: p.topic,
                        payload: p.payload,
                        retain: p.retain,
                    },
                    Event::Incoming(Incoming::PubAck(a)) => Ev::Acked(a.pkid),
                    Event::Incoming(Incoming::PubRec(a)) => Ev::Acked(a.pkid),
                    Event::Outgoing(o) => outgoing(o),
                    _ => Ev::Other,
                })
            }
            Loop::V5(l) => {
                use rumqttc::v5::Event;
                Ok(match l.poll().await.map_err(|e| e.to_string())? {
                    Event::Incoming(p5::Packet::ConnAck(a)) => Ev::ConnAck {
                        session_present: a.session_present,
                    },
                    Event::Incoming(p5::Packet::Publish(p)) => Ev::Publish {
                        topic: String::from_utf8_lossy(&p.topic).into_owned(),
                        payload: p.payload,
                        retain: p.retain,
                    },
                    Event::Incoming(p5::Packet::PubAck(a)) => Ev::Acked(a.pkid),
                    Event::Incoming(p5::Packet::PubRec(a)) => Ev::Acked(a.pkid),
                    Event::Outgoing(o) => outgoing(o),
                    _ => Ev::Other,
                })
            }
        }
    }

    /// Publications rumqttc will write again itself first (a resumed session).
    pub(crate) fn pending_publishes(&self) -> usize {
        match self {
            Loop::V4(l) => l
                .pending
                .iter()
                .filter(|r| matches!(r, rumqttc::Request::Publish(_)))
                .count(),
            Loop::V5(l) => l
                .pending
                .iter()
                .filter(|r| matches!(r, rumqttc::v5::Request::Publish(_)))
                .count(),
        }
    }
}

/// Messages are written whole and at once: waiting to fill segments (Nagle) would hold the
/// last part of each one, behind TLS's record boundaries most of all, until the broker's
/// delayed acknowledgement (tens of milliseconds).
fn nodelay() -> rumqttc::NetworkOptions {
    let mut n = rumqttc::NetworkOptions::new();
    n.set_tcp_nodelay(true);
    n
}

fn outgoing(o: Outgoing) -> Ev {
    match o {
        Outgoing::Publish(pkid) => Ev::Written(pkid),
        Outgoing::Disconnect => Ev::Disconnected,
        _ => Ev::Other,
    }
}
