import type { Agent } from "node:https";
import { request } from "node:https";
import { performance } from "node:perf_hooks";

/** POSTs JSON `body`; fails once `deadline` (performance.now() time) passes, queued or sent. */
export function postJson(
  url: string,
  body: string,
  agent: Agent,
  deadline: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() });
        });
        res.on("error", reject);
      },
    );
    const timer = setTimeout(
      () => req.destroy(new Error("no answer by the deadline")),
      Math.max(0, deadline - performance.now()),
    );
    req.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(body);
  });
}
