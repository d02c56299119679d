/** A Python kernel of a Jupyter Server reached through the runtimes proxy, as JupyterLab drives one. */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";

/**
 * Starts a Python kernel through the proxy and runs one cell over its WebSocket: the cell's result.
 * `token` is the Jupyter Server's own (in the WebSocket's `?token=`); `proxy` the headers that get
 * the requests past the runtimes proxy (the owner's session cookie, or their `Authorization`).
 */
export async function runCell(
  url: string,
  token: string,
  code: string,
  proxy: Record<string, string> = {},
): Promise<string> {
  const auth = { Authorization: `token ${token}`, ...proxy };
  const started = await fetch(`${url}api/kernels`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify({ name: "python3" }),
  });
  assert.equal(started.status, 201, await started.clone().text());
  const kernel = (await started.json()) as { id: string };
  const socketUrl = `${url.replace(/^http/, "ws")}api/kernels/${kernel.id}/channels?token=${token}`;
  const socket = new WebSocket(socketUrl, { headers: proxy });
  try {
    return await new Promise<string>((resolve, reject) => {
      const msgId = randomUUID();
      const timer = setTimeout(() => reject(new Error(`no result for ${code} within 60 s`)), 60_000);
      socket.onerror = () => reject(new Error(`the kernel's WebSocket failed (${socketUrl})`));
      socket.onopen = () =>
        socket.send(
          JSON.stringify({
            header: {
              msg_id: msgId,
              msg_type: "execute_request",
              session: randomUUID(),
              username: "",
              version: "5.3",
            },
            parent_header: {},
            metadata: {},
            content: { code, silent: false, store_history: true, user_expressions: {}, allow_stdin: false },
            channel: "shell",
            buffers: [],
          }),
        );
      socket.onmessage = (event) => {
        const message = JSON.parse(String(event.data)) as {
          msg_type: string;
          parent_header: { msg_id?: string };
          content: { data?: Record<string, string>; ename?: string; evalue?: string };
        };
        if (message.parent_header.msg_id !== msgId) return;
        if (message.msg_type === "error")
          reject(new Error(`${message.content.ename}: ${message.content.evalue}`));
        if (message.msg_type === "execute_result") {
          clearTimeout(timer);
          resolve(message.content.data?.["text/plain"] ?? "");
        }
      };
    });
  } finally {
    socket.close();
    await fetch(`${url}api/kernels/${kernel.id}`, { method: "DELETE", headers: auth });
  }
}
