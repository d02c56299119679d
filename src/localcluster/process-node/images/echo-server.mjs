// The program of LOCAL_IMAGES.echo on the process node: answers as jmalloc/echo-server does (HTTP
// requests echoed as text, WebSocket messages echoed back, /.sse as server-sent events, $PORT,
// SEND_SERVER_HOSTNAME, SEND_HEADER_*). Plain JavaScript run by node itself, without the
// TypeScript loader: a hundred of these run at once, and the loader would double each one's memory.
import { createServer } from "node:http";
import { hostname } from "node:os";
import { WebSocketServer } from "ws";

const hostFlag = process.argv.indexOf("--host");
const listenHost = hostFlag > 0 ? process.argv[hostFlag + 1] : undefined;
const port = Number(process.env.PORT || "8080");
const serverName = process.env.HOSTNAME || hostname();

/** Go's canonical header key: "x-forwarded-for" → "X-Forwarded-For". */
function canonicalKey(key) {
  return key.toLowerCase().replace(/(^|-)([a-z])/g, (_, dash, letter) => dash + letter.toUpperCase());
}

function sendsHostname(req) {
  const wanted = req.headers["x-send-server-hostname"] || process.env.SEND_SERVER_HOSTNAME || "";
  return wanted.toLowerCase() !== "false";
}

function extraHeaders() {
  const headers = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith("SEND_HEADER_")) headers[key.slice(12).replaceAll("_", "-")] = value;
  }
  return headers;
}

/** The request as the echo server writes it: request line, Host, sorted headers, then the body. */
function describeRequest(req, body) {
  const headers = new Map();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const key = canonicalKey(req.rawHeaders[i]);
    if (key === "Host") continue;
    headers.set(key, [...(headers.get(key) ?? []), req.rawHeaders[i + 1]]);
  }
  let text = `${req.method} ${req.url} HTTP/${req.httpVersion}\n\nHost: ${req.headers.host ?? ""}\n`;
  for (const key of [...headers.keys()].sort()) {
    for (const value of headers.get(key)) text += `${key}: ${value}\n`;
  }
  return body.length > 0 ? `${text}\n${body}` : text;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

const frontend = `<!doctype html>
<title>echo-server</title>
<pre id="log"></pre>
<form id="send"><input id="message" autofocus><button>send</button></form>
<script>
const log = (line) => (document.getElementById("log").textContent += line + "\\n");
const ws = new WebSocket(location.href.replace(/^http/, "ws").replace(/\\/\\.ws$/, "/"));
ws.onmessage = (e) => log("< " + e.data);
document.getElementById("send").onsubmit = (e) => {
  e.preventDefault();
  const input = document.getElementById("message");
  ws.send(input.value);
  log("> " + input.value);
  input.value = "";
};
</script>
`;

async function serveSse(req, res, withHostname) {
  const body = await readBody(req);
  res.writeHead(200, {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    Connection: "keep-alive",
    "Access-Control-Allow-Origin": "*",
  });
  let id = 0;
  const send = (event, data) => {
    id++;
    const lines = data.split("\n").map((line) => `data: ${line}\n`);
    res.write(`event: ${event}\n${lines.join("")}id: ${id}\n\n`);
  };
  if (withHostname) send("server", serverName);
  send("request", describeRequest(req, body));
  const timer = setInterval(() => send("time", new Date().toISOString().replace(/\.\d+Z$/, "Z")), 1000);
  req.on("close", () => clearInterval(timer));
}

const server = createServer(async (req, res) => {
  process.stdout.write(`${req.socket.remoteAddress}:${req.socket.remotePort} | ${req.method} ${req.url}\n`);
  for (const [key, value] of Object.entries(extraHeaders())) res.setHeader(key, value);
  const withHostname = sendsHostname(req);
  const path = req.url.split("?")[0];
  if (path === "/.ws") {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end(frontend);
  } else if (path === "/.sse") {
    await serveSse(req, res, withHostname);
  } else {
    const body = await readBody(req);
    res.writeHead(200, { "Content-Type": "text/plain" });
    res.end(`${withHostname ? `Request served by ${serverName}\n\n` : ""}${describeRequest(req, body)}`);
  }
});

const sockets = new WebSocketServer({ noServer: true });
server.on("upgrade", (req, socket, head) => {
  const remote = `${req.socket.remoteAddress}:${req.socket.remotePort}`;
  sockets.handleUpgrade(req, socket, head, (ws) => {
    process.stdout.write(`${remote} | upgraded to websocket\n`);
    ws.send(sendsHostname(req) ? `Request served by ${serverName}` : "");
    ws.on("message", (data, isBinary) => {
      process.stdout.write(
        isBinary ? `${remote} | bin | ${data.length} byte(s)\n` : `${remote} | txt | ${data}\n`,
      );
      ws.send(data, { binary: isBinary });
    });
  });
});

server.listen(port, listenHost, () => process.stdout.write(`Echo server listening on port ${port}.\n`));
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));
