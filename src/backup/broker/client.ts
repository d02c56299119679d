/**
 * The agent's side of the broker: each store request is asked for with the pod's projected token,
 * read again from its file every time (the kubelet renews it before it expires).
 */
import { readFile } from "node:fs/promises";
import type { PresignedRequest, StoreBroker, StoreRequest } from "../store/presigned.js";
import { PRESIGN_PATH } from "./paths.js";

export class HttpStoreBroker implements StoreBroker {
  readonly url: string;

  constructor(
    baseUrl: string,
    private readonly tokenFile: string,
  ) {
    this.url = baseUrl.replace(/\/+$/, "");
  }

  async presign(request: StoreRequest): Promise<PresignedRequest> {
    const token = (await readFile(this.tokenFile, "utf8")).trim();
    const response = await fetch(`${this.url}${PRESIGN_PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    if (!response.ok) {
      let detail = text.slice(0, 500);
      try {
        detail = (JSON.parse(text) as { detail?: string }).detail ?? detail;
      } catch {}
      throw new Error(
        `the broker at ${this.url} refused ${request.operation} of ${request.key} (${response.status}): ${detail}`,
      );
    }
    return JSON.parse(text) as PresignedRequest;
  }
}
