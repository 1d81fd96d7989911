//! `roam name`: print a topic's 256-bit name.

use clap::Args;

use super::{CmdResult, KindArg};

#[derive(Debug, Args)]
pub struct NameArgs {
    /// Realm file.
    #[arg(long, value_name = "FILE")]
    pub realm: std::path::PathBuf,
    /// ROS 2 topic name, e.g. /chatter.
    pub topic: String,
    /// ROS 2 type name, e.g. std_msgs/msg/String.
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
    let realm = crate::realm_file::load(&a.realm)?;
    let d = roam_proto::TopicDescriptor {
        topic: a.topic,
        type_name: a.type_name,
        kind: a.kind.into(),
        instance: a.instance,
    };
    println!("{}", d.name(&realm.secret));
    Ok(())
}
