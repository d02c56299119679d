/**
 * HTTP/1.1 over a bare socket (plain or TLS), for requests no client library would send: bodies
 * larger than they say or than any limit, malformed request lines, headers past every bound. The
 * whole request goes out before anything is read, as most scripts' clients do; then every answer
 * the server wrote is parsed.
 */
import assert from "node:assert/strict";
import { connect as connectTcp, type Socket } from "node:net";
import { connect as connectTls } from "node:tls";

export interface RawTarget {
  port: number;
  host?: string;
  /** Speak TLS, trusting this CA (and presenting this client certificate, when given). */
  tls?: { ca: string; cert?: string; key?: string };
}

export interface RawExchange {
  /** Everything the server sent. */
  text: string;
  /** How the connection ended badly, if it did (ECONNRESET, EPIPE, …). */
  error?: string;
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: problem bodies are read member by member
  json: any;
}

/**
 * Sends `head` and then `bodyBytes` bytes of filler, then reads until the server closes the
 * connection, `answers` complete answers arrived (default 1), or `timeoutMs` passed.
 */
export function exchange(
  target: RawTarget | number,
  head: string,
  bodyBytes = 0,
  options: { answers?: number; timeoutMs?: number } = {},
): Promise<RawExchange> {
  const t = typeof target === "number" ? { port: target } : target;
  const host = t.host ?? "127.0.0.1";
  const socket: Socket = t.tls
    ? connectTls({
        host,
        port: t.port,
        ca: t.tls.ca,
        cert: t.tls.cert,
        key: t.tls.key,
        servername: "localhost",
      })
    : connectTcp({ host, port: t.port });
  return new Promise((resolve) => {
    let text = "";
    let settled = false;
    const finish = (error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(error ? { text, error } : { text });
    };
    const timer = setTimeout(() => finish("timed out"), options.timeoutMs ?? 120_000);
    socket.pause();
    socket.on("data", (data: Buffer) => {
      text += data.toString("latin1");
      if (parseAnswers({ text }).length >= (options.answers ?? 1)) finish();
    });
    socket.on("error", (err: NodeJS.ErrnoException) => finish(err.code ?? err.message));
    socket.on("close", () => finish());
    const start = () => {
      socket.write(head);
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let sent = 0;
      const write = (): void => {
        while (sent < bodyBytes) {
          const piece = chunk.subarray(0, Math.min(chunk.length, bodyBytes - sent));
          sent += piece.length;
          if (!socket.write(piece) && sent < bodyBytes) {
            socket.once("drain", write);
            return;
          }
        }
        socket.resume();
      };
      write();
    };
    if (t.tls) socket.once("secureConnect", start);
    else socket.once("connect", start);
  });
}

/** The complete answers in what a server sent (Content-Length or chunked bodies). */
export function parseAnswers(exchanged: RawExchange): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = exchanged.text;
  for (;;) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? "")?.[1]);
    if (!status) break;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let body = rest.slice(end + 4);
    if (status < 200 && status >= 100) {
      rest = body;
      continue;
    }
    let consumed: number;
    if (headers["transfer-encoding"]?.includes("chunked")) {
      let decoded = "";
      let at = 0;
      for (;;) {
        const lineEnd = body.indexOf("\r\n", at);
        if (lineEnd < 0) return answers;
        const size = Number.parseInt(body.slice(at, lineEnd), 16);
        if (body.length < lineEnd + 2 + size + 2) return answers;
        decoded += body.slice(lineEnd + 2, lineEnd + 2 + size);
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      consumed = at;
      body = decoded;
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (body.length < length) break;
      consumed = length;
      body = body.slice(0, length);
    }
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {}
    answers.push({ status, headers, body, json });
    rest = rest.slice(end + 4 + consumed);
  }
  return answers;
}

/** The first answer, or a failure saying what came instead (a reset, nothing, half an answer). */
export function firstAnswer(exchanged: RawExchange): RawAnswer {
  const [answer] = parseAnswers(exchanged);
  if (!answer) {
    throw new Error(
      `no complete answer (${exchanged.error ?? "closed"}): ${JSON.stringify(exchanged.text.slice(0, 500))}`,
    );
  }
  return answer;
}

/** An RFC 9457 problem: its media type, and a body with type, title, status (the answer's) and detail. */
export function assertProblem(answer: RawAnswer | undefined): asserts answer is RawAnswer {
  assert.ok(answer, "an answer");
  assert.match(answer.headers["content-type"] ?? "", /^application\/problem\+json\b/, JSON.stringify(answer));
  assert.equal(typeof answer.json?.type, "string", answer.body);
  assert.equal(typeof answer.json.title, "string", answer.body);
  assert.equal(answer.json.status, answer.status, answer.body);
  assert.equal(typeof answer.json.detail, "string", answer.body);
}
