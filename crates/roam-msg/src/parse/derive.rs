//! The types rosidl derives from services and actions (`rosidl_parser/definition.py`,
//! classes `Service` and `Action`), built exactly as it builds them.

use crate::names::{Kind, TypeName};
use crate::schema::{BaseType, Field, FieldType, MessageDef, Multiplicity, Primitive};

fn named(package: &str, name: &str) -> BaseType {
    BaseType::Named(TypeName {
        package: package.into(),
        kind: Kind::Msg,
        name: name.into(),
    })
}

fn field(name: &str, base: BaseType) -> Field {
    Field {
        name: name.into(),
        ty: FieldType {
            base,
            multiplicity: Multiplicity::Single,
        },
        default: None,
    }
}

/// `X_Event` of a service (Iron and later): `service_msgs/ServiceEventInfo info`,
/// `X_Request[<=1] request`, `X_Response[<=1] response`.
pub fn service_event(service: &TypeName) -> MessageDef {
    let part = |suffix: &str| Field {
        name: suffix.to_ascii_lowercase(),
        ty: FieldType {
            base: BaseType::Named(service.sibling(format!("{}_{suffix}", service.name))),
            multiplicity: Multiplicity::Bounded(1),
        },
        default: None,
    };
    MessageDef {
        name: service.sibling(format!("{}_Event", service.name)),
        fields: vec![
            field("info", named("service_msgs", "ServiceEventInfo")),
            part("Request"),
            part("Response"),
        ],
        constants: Vec::new(),
    }
}

/// The derived types of an action `X`: `X_SendGoal_Request/Response`,
/// `X_GetResult_Request/Response` and `X_FeedbackMessage`.
pub fn action_types(action: &TypeName) -> Vec<MessageDef> {
    let own = |suffix: &str| BaseType::Named(action.sibling(format!("{}_{suffix}", action.name)));
    let uuid = || named("unique_identifier_msgs", "UUID");
    let def = |suffix: &str, fields: Vec<Field>| MessageDef {
        name: action.sibling(format!("{}_{suffix}", action.name)),
        fields,
        constants: Vec::new(),
    };
    vec![
        def(
            "SendGoal_Request",
            vec![field("goal_id", uuid()), field("goal", own("Goal"))],
        ),
        def(
            "SendGoal_Response",
            vec![
                field("accepted", BaseType::Primitive(Primitive::Bool)),
                field("stamp", named("builtin_interfaces", "Time")),
            ],
        ),
        def("GetResult_Request", vec![field("goal_id", uuid())]),
        def(
            "GetResult_Response",
            vec![
                field("status", BaseType::Primitive(Primitive::Int8)),
                field("result", own("Result")),
            ],
        ),
        def(
            "FeedbackMessage",
            vec![field("goal_id", uuid()), field("feedback", own("Feedback"))],
        ),
    ]
}
