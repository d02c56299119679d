/**
 * A plugin served over HTTP: each callout is `POST <url>/<callout>` with the JSON request; the
 * plugin answers 2xx with the JSON reply (an `https` URL may name its own CA bundle). A non-2xx
 * answer, a reply that is not JSON, no answer by the deadline: the callout fails with what the
 * plugin said.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { PluginRef } from "../api/runtime-service.js";
import { type CalloutTransport, clip, RemotePlugin } from "./remote.js";
import { type Callout, PluginError } from "./spi.js";

/** Largest reply read from a plugin (the YAML of a runtime is far smaller). */
const MAX_REPLY_BYTES = 2 * 1024 * 1024;
export const DEFAULT_CALLOUT_TIMEOUT_SECONDS = 30;

export type HttpPluginRef = NonNullable<PluginRef["http"]>;

export function httpTransport(ref: HttpPluginRef): CalloutTransport {
  const base = ref.url.replace(/\/+$/, "");
  const timeoutMs = (ref.timeoutSeconds ?? DEFAULT_CALLOUT_TIMEOUT_SECONDS) * 1000;
  return (callout, body) => post(callout, `${base}/${callout}`, body, timeoutMs, ref.caBundle);
}

export class HttpPlugin extends RemotePlugin {
  constructor(ref: HttpPluginRef) {
    super(httpTransport(ref));
  }
}

function post(
  callout: Callout,
  url: string,
  body: unknown,
  timeoutMs: number,
  ca: string | undefined,
): Promise<unknown> {
  const payload = Buffer.from(JSON.stringify(body));
  const target = new URL(url);
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let settled = false;
    const finish = (error: string | undefined, value?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === undefined) resolve(value);
      else reject(new PluginError(callout, error));
    };
    const failed = (err: Error & { code?: string }) =>
      finish(
        timedOut
          ? `${url} did not answer within ${timeoutMs / 1000} s (timeoutSeconds)`
          : `${url}: ${err.code ? `${err.code} ` : ""}${err.message}`,
      );
    const req = send(
      target,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json",
          "content-length": payload.length,
        },
        ...(ca && target.protocol === "https:" ? { ca } : {}),
      },
      (res) => {
        readBody(res).then((text) => {
          const status = res.statusCode ?? 0;
          const parsed = parseJson(text);
          if (status < 200 || status > 299) {
            const said = (parsed as { message?: unknown } | undefined)?.message;
            const message = typeof said === "string" ? said : text;
            return finish(`${url} answered ${status}${message ? `: ${clip(message)}` : ""}`);
          }
          if (parsed === undefined)
            return finish(`${url} answered ${status} without a JSON body: ${clip(text)}`);
          finish(undefined, parsed);
        }, failed);
      },
    );
    const timer = setTimeout(() => {
      timedOut = true;
      req.destroy(new Error("timed out"));
    }, timeoutMs);
    req.on("error", failed);
    req.end(payload);
  });
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REPLY_BYTES) {
        res.destroy();
        reject(new Error(`the reply is larger than ${MAX_REPLY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    res.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    res.on("error", reject);
  });
}
