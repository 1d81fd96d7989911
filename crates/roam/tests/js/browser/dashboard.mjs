// Drives headless Chromium (Debian's, through playwright-core) to `roam dashboard`'s page and
// reports what its DOM shows, for tests/network/dashboard_browser.rs.
//
// usage: node dashboard.mjs URL SCREENSHOT SECONDS WAIT_TOPIC MIN_RATE
// Prints "dom JSON" every 500 ms ({state, members: [[id, kind, health]], links: [[member,
// peer, rtt]], topics: [[topic, dir, member, rate, bandwidth]]}), then, once WAIT_TOPIC shows
// a rate of at least MIN_RATE on every row (each member that carries it), or after SECONDS,
// "screenshot PATH" and "done". Every row, because the test waits for a particular member's
// row: stopping at the first row over the mark left the test without the line it waits for.
import { chromium } from "playwright-core";

const [url, screenshot, seconds, waitTopic, minRate] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let code = 1;
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  page.on("pageerror", (e) => console.log(`pageerror ${e.message}`));
  await page.goto(url);
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end) {
    const dom = await page.evaluate(() => {
      const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)]
        .map((tr) => [...tr.children].map((td) => td.textContent));
      return {
        state: document.getElementById("state").textContent,
        members: rows("members").map((r) => [r[0], r[1], r[2]]),
        links: rows("links").map((r) => [r[0], r[1], r[2]]),
        topics: rows("topics").map((r) => [r[0], r[1], r[2], Number(r[3]), r[5]]),
        sparklines: document.querySelectorAll("#topics svg.spark polyline").length,
      };
    });
    console.log(`dom ${JSON.stringify(dom)}`);
    const rows = dom.topics.filter((t) => t[0] === waitTopic);
    if (rows.length > 0 && rows.every((t) => t[3] >= Number(minRate))) break;
    await page.waitForTimeout(500);
  }
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot ${screenshot}`);
  code = 0;
} catch (e) {
  console.log(`error ${e.message}`);
} finally {
  await browser.close();
}
console.log("done");
process.exit(code);
