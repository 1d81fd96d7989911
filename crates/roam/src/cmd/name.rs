//! `roam name`: print a topic's 256-bit name.

use clap::Args;

use super::{CmdResult, KindArg};

#[derive(Debug, Args)]
pub struct NameArgs {
    /// Realm file.
    #[arg(long, value_name = "FILE")]
    pub realm: std::path::PathBuf,
    /// ROS 2 topic name, e.g. /chatter (chatter is /chatter; dds:NAME for a raw DDS topic).
    pub topic: String,
    /// ROS 2 type name, e.g. std_msgs/msg/String (std_msgs/String is taken as
    /// std_msgs/msg/String).
    #[arg(value_name = "TYPE")]
    pub type_name: String,
    /// Instance tag.
    #[arg(long, default_value = "")]
    pub instance: String,
    /// Topic or service.
    #[arg(long, value_enum, default_value_t = KindArg::Topic)]
    pub kind: KindArg,
}

pub fn run(a: NameArgs) -> CmdResult {
    let realm = roam_edge::realm::load(&a.realm)?;
    let d = super::descriptor(&a.topic, &a.type_name, a.kind, &a.instance)?;
    println!("{}", d.name(&realm.secret));
    Ok(())
}
