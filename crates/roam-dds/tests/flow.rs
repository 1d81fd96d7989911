//! A flow-controlled reader ([`Reader::with_flow`]) that pauses takes nothing more until it is
//! resumed, loses nothing, keeps the order, and does not hold up the participant's other
//! readers meanwhile.

mod common;

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cdr_string, decode_cdr_string, wait_for};
use roam_dds::{
    loopback_config, Flow, History, Participant, Qos, Reader, Resumer, TopicInfo, Writer,
};

const T: Duration = Duration::from_secs(20);

fn keep_all() -> Qos {
    Qos {
        reliable: true,
        transient_local: false,
        history: History::KeepAll,
    }
}

#[test]
fn a_paused_reader_takes_nothing_until_resumed_and_the_others_flow_meanwhile() {
    let p = Participant::new(117, Some(loopback_config())).expect("participant");
    let (images, joy) = (
        TopicInfo::keyless("rt/flow_images", "std_msgs::msg::dds_::String_"),
        TopicInfo::keyless("rt/flow_joy", "std_msgs::msg::dds_::String_"),
    );
    // The image reader pauses at its 5th sample and hands the resumer to the test.
    let (img_tx, img_rx) = channel::<String>();
    let (resume_tx, resume_rx) = channel::<Resumer>();
    let resume_tx = Arc::new(Mutex::new(resume_tx));
    let _image_reader = Reader::with_flow(&p, &images, &keep_all(), move |s| {
        let text = decode_cdr_string(&s.cdr).expect("a string");
        let pause = text == "image 4";
        img_tx.send(text).unwrap();
        if pause {
            let tx: Arc<Mutex<Sender<Resumer>>> = resume_tx.clone();
            Flow::Pause(Box::new(move |r| tx.lock().unwrap().send(r).unwrap()))
        } else {
            Flow::Continue
        }
    })
    .unwrap();
    let (joy_tx, joy_rx) = channel::<String>();
    let _joy_reader = Reader::new(&p, &joy, &keep_all(), move |s| {
        joy_tx.send(decode_cdr_string(&s.cdr).unwrap()).unwrap()
    })
    .unwrap();
    let (image_writer, joy_writer) = (
        Writer::new(&p, &images, &keep_all()).unwrap(),
        Writer::new(&p, &joy, &keep_all()).unwrap(),
    );
    wait_for("match", T, || {
        (image_writer.matched_readers().unwrap() >= 1 && joy_writer.matched_readers().unwrap() >= 1)
            .then_some(())
    });

    for i in 0..50 {
        image_writer
            .write_cdr(&cdr_string(&format!("image {i}")))
            .unwrap();
    }
    let resumer = resume_rx.recv_timeout(T).expect("the reader paused");
    // What was taken with the pausing sample's batch arrives; then nothing more.
    let mut got: Vec<String> = img_rx.try_iter().collect();
    assert!(got.len() >= 5 && got.len() < 50, "taken before the pause: {}", got.len());
    std::thread::sleep(Duration::from_millis(300));
    got.extend(img_rx.try_iter());
    let taken_while_paused = got.len();
    assert!(taken_while_paused < 50, "a paused reader took everything");

    // The participant's other reader flows while this one is paused.
    for i in 0..10 {
        joy_writer.write_cdr(&cdr_string(&format!("joy {i}"))).unwrap();
    }
    let joy: Vec<String> = (0..10).map(|_| joy_rx.recv_timeout(T).expect("joy")).collect();
    assert_eq!(joy, (0..10).map(|i| format!("joy {i}")).collect::<Vec<_>>());
    got.extend(img_rx.try_iter());
    assert_eq!(got.len(), taken_while_paused, "taken while paused");

    // Resumed from another thread: the rest, in order, none lost.
    std::thread::spawn(move || resumer.resume()).join().unwrap();
    while got.len() < 50 {
        got.push(img_rx.recv_timeout(T).expect("the rest after resume"));
    }
    assert_eq!(got, (0..50).map(|i| format!("image {i}")).collect::<Vec<_>>());
}

#[test]
fn a_resumer_outliving_its_reader_does_nothing() {
    let p = Participant::new(118, Some(loopback_config())).expect("participant");
    let topic = TopicInfo::keyless("rt/flow_gone", "std_msgs::msg::dds_::String_");
    let (resume_tx, resume_rx) = channel::<Resumer>();
    let resume_tx = Arc::new(Mutex::new(resume_tx));
    let reader = Reader::with_flow(&p, &topic, &keep_all(), move |_| {
        let tx = resume_tx.clone();
        Flow::Pause(Box::new(move |r| tx.lock().unwrap().send(r).unwrap()))
    })
    .unwrap();
    let writer = Writer::new(&p, &topic, &keep_all()).unwrap();
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });
    writer.write_cdr(&cdr_string("one")).unwrap();
    writer.write_cdr(&cdr_string("two")).unwrap();
    let resumer = resume_rx.recv_timeout(T).expect("paused");
    drop(reader);
    resumer.resume();
}
