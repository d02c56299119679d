/**
 * One HTTPS request on its own connection, as a caller outside every client library makes it: a
 * CA of its choosing, optionally a client certificate (kube-apiserver's, or a forged one), a JSON
 * body. The answer is its status and its body, parsed when it is JSON and `{ message: text }` when
 * it is not, so that a refusal in plain text still reads.
 */
import { request } from "node:https";

export interface HttpsJsonOptions {
  method?: string;
  /** The CA the server's certificate must chain to. */
  ca: string;
  /** A client certificate to present. */
  client?: { certPem: string; keyPem: string };
  headers?: Record<string, string>;
  /** Sent as JSON; a string is sent as it is. */
  body?: unknown;
}

export interface HttpsJsonAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: answers are read member by member
  body: Record<string, any>;
}

export function httpsJson(url: string | URL, options: HttpsJsonOptions): Promise<HttpsJsonAnswer> {
  const payload =
    options.body === undefined
      ? undefined
      : typeof options.body === "string"
        ? options.body
        : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? (payload === undefined ? "GET" : "POST"),
        ca: options.ca,
        // A fresh connection each time: a certificate presented once is not reused by a pool.
        agent: false,
        ...(options.client ? { cert: options.client.certPem, key: options.client.keyPem } : {}),
        headers: {
          accept: "application/json",
          ...(payload === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => {
          let body: Record<string, unknown>;
          try {
            body = text ? JSON.parse(text) : {};
          } catch {
            body = { message: text };
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}
