// The page under test: roslibjs 2.x (npm `roslib`) as a web page uses it, bundled by esbuild.
// It connects to the gateway given in the URL's query (`?url=wss://...&token=...`), subscribes
// to a topic and shows every message in the DOM, where the test reads it.
import { Ros, Topic } from "roslib";

const q = new URLSearchParams(location.search);
const status = document.getElementById("status");
const last = document.getElementById("last");
const count = document.getElementById("count");
let n = 0;

const ros = new Ros({ url: q.get("url") });
ros.on("connection", () => { status.textContent = "connected"; });
ros.on("error", () => { status.textContent = "error"; });
ros.on("close", () => { if (status.textContent !== "error") status.textContent = "closed"; });

const topic = new Topic({ ros, name: q.get("topic"), messageType: q.get("type") });
topic.subscribe((msg) => {
  n += 1;
  count.textContent = String(n);
  last.textContent = msg.data;
});

// Publishing back from the page: what a control panel does.
if (q.get("echo")) {
  const echo = new Topic({ ros, name: q.get("echo"), messageType: q.get("type") });
  topic.subscribe((msg) => echo.publish({ data: "page saw " + msg.data }));
}
