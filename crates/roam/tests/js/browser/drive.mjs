// Drives headless Chromium (Debian's, through playwright-core) to the roslibjs page and reports
// what its DOM shows, one line per observation, for tests/gateway/browser.rs.
//
// usage: node drive.mjs GATEWAY_WSS_URL SPKI_SHA256_BASE64 TOPIC TYPE ECHO_TOPIC SCREENSHOT
// The page is bundled with esbuild at start and served from memory by this process on
// http://127.0.0.1 (a loopback origin, as when the gateway's host serves it: Chromium's local
// network access checks refuse a public page talking to a loopback address). Chromium trusts
// the gateway's certificate by its public key hash only (--ignore-certificate-errors-spki-list),
// as a pinned deployment would.
// Prints "status TEXT" when the connection state changes, "count N last TEXT" as messages
// arrive (N as the DOM shows it, so some counts may be skipped), "screenshot PATH" and "done" at the end (after 5 messages or 30 s).
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const [url, spki, topic, type, echo, screenshot] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
const bundle = await build({
  entryPoints: [join(here, "page.js")],
  bundle: true,
  format: "esm",
  platform: "browser",
  write: false,
  logLevel: "error",
});
const files = {
  "/index.html": ["text/html", readFileSync(join(here, "index.html"))],
  "/page.bundle.js": ["text/javascript", bundle.outputFiles[0].contents],
};

const server = createServer((req, res) => {
  const f = files[new URL(req.url, "http://127.0.0.1").pathname];
  if (!f) {
    res.writeHead(404).end("not found");
    return;
  }
  res.writeHead(200, { "content-type": f[0] }).end(Buffer.from(f[1]));
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--ignore-certificate-errors-spki-list=${spki}`,
  ],
});
let code = 1;
try {
  const page = await browser.newPage();
  page.on("console", (m) => console.log(`console ${m.type()} ${m.text()}`));
  page.on("pageerror", (e) => console.log(`pageerror ${e.message}`));
  const q = new URLSearchParams({ url, topic, type, echo });
  await page.goto(`${origin}/index.html?${q}`);
  let lastStatus = "", lastCount = "";
  const end = Date.now() + 30000;
  while (Date.now() < end) {
    const [status, count, last] = await page.evaluate(() =>
      ["status", "count", "last"].map((id) => document.getElementById(id).textContent));
    if (status !== lastStatus) console.log(`status ${status}`);
    if (count !== lastCount) console.log(`count ${count} last ${last}`);
    lastStatus = status;
    lastCount = count;
    if (Number(count) >= 5) break;
    await page.waitForTimeout(100);
  }
  await page.screenshot({ path: screenshot });
  console.log(`screenshot ${screenshot}`);
  code = 0;
} catch (e) {
  console.log(`error ${e.message}`);
} finally {
  await browser.close();
  server.close();
}
console.log("done");
process.exit(code);
