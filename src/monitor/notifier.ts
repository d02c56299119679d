/**
 * Webhook notifications of alerts: JSON bodies signed with HMAC-SHA256 (the secret from a
 * Secret), each delivery retried with exponential backoff. `enqueue` never waits: deliveries
 * beyond the queue's capacity are dropped and counted, so a slow or dead receiver cannot hold up
 * the monitor.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import pLimit, { type LimitFunction } from "p-limit";
import type { Logger } from "pino";
import { describeError, exponentialDelay, silentLogger } from "../kube/index.js";

export const SIGNATURE_HEADER = "x-tenantry-signature-256";
export const DELIVERY_HEADER = "x-tenantry-delivery";

export interface AlertNotification {
  status: "firing" | "resolved";
  rule: string;
  object: string;
  condition: string;
  target: { kind: string; namespace?: string; name: string };
  tenant?: string;
  cluster: string;
  since: string;
  firedAt: string;
  resolvedAt?: string;
  message: string;
  remediation?: string;
}

export interface WebhookTarget {
  url: string;
  secretRef?: { namespace: string; name: string; key: string };
}

/** `sha256=<hex HMAC-SHA256 of body>`, the value of {@link SIGNATURE_HEADER}. */
export function signBody(secret: string | Buffer, body: string | Buffer): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Whether `signature` is `body`'s signature under `secret` (compared in constant time). */
export function verifySignature(secret: string | Buffer, body: string | Buffer, signature: string): boolean {
  const expected = Buffer.from(signBody(secret, body));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}

/** Delay before attempt `attempt` (1 = the first retry): base × 2^(attempt-1), at most `maxMs`. */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number): number {
  return exponentialDelay(attempt - 1, baseMs, maxMs);
}

export type DeliveryOutcome = "delivered" | "failed" | "dropped";

export interface WebhookNotifierOptions {
  /** Deliveries pending or retrying at once before new ones are dropped (default 1000). */
  capacity?: number;
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  /** Attempts per delivery, the first included (default 6). */
  maxAttempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** One request's deadline (default 10 s). */
  timeoutMs?: number;
  /** The signing secret of a target; undefined when the Secret or its key is missing. */
  secretOf(ref: NonNullable<WebhookTarget["secretRef"]>): Promise<string | Buffer | undefined>;
  /** Each delivery's end. */
  onOutcome?(outcome: DeliveryOutcome): void;
  logger?: Logger;
}

export class WebhookNotifier {
  private outstanding = 0;
  /** Sends in flight at once (a delivery waiting to retry holds none). */
  private readonly sending: LimitFunction;
  private readonly stopped = new AbortController();
  private readonly deliveries = new Set<Promise<void>>();
  private readonly logger: Logger;

  constructor(private readonly options: WebhookNotifierOptions) {
    this.logger = options.logger ?? silentLogger;
    this.sending = pLimit(Math.max(1, options.concurrency ?? 4));
  }

  /** Deliveries pending or retrying. */
  pending(): number {
    return this.outstanding;
  }

  /** Queues a delivery; false (and counted as dropped) when the queue is full or stopped. */
  enqueue(target: WebhookTarget, notification: AlertNotification): boolean {
    if (this.stopped.signal.aborted || this.outstanding >= (this.options.capacity ?? 1000)) {
      this.logger.warn(
        { url: target.url, rule: notification.rule },
        "webhook queue full: notification dropped",
      );
      this.options.onOutcome?.("dropped");
      return false;
    }
    this.outstanding++;
    const delivery = this.deliver(target, notification).finally(() => {
      this.outstanding--;
      this.deliveries.delete(delivery);
    });
    this.deliveries.add(delivery);
    return true;
  }

  /** Stops retrying; deliveries in flight end at their next step. */
  async stop(): Promise<void> {
    this.stopped.abort();
    await Promise.allSettled([...this.deliveries]);
  }

  private async deliver(target: WebhookTarget, notification: AlertNotification): Promise<void> {
    const body = JSON.stringify(notification);
    const id = randomUUID();
    const maxAttempts = this.options.maxAttempts ?? 6;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) {
        await sleep(
          backoffDelay(attempt - 1, this.options.baseDelayMs ?? 500, this.options.maxDelayMs ?? 30_000),
          undefined,
          { signal: this.stopped.signal },
        ).catch(() => {});
      }
      if (this.stopped.signal.aborted) break;
      // A delivery still waiting for a slot when stop() comes gives up without sending; those in
      // flight end at once (their fetch follows the same signal), so the queue empties quickly.
      const verdict = await this.sending(() =>
        this.stopped.signal.aborted ? ("give-up" as const) : this.send(target, body, id, attempt),
      );
      if (verdict === "ok") {
        this.options.onOutcome?.("delivered");
        return;
      }
      if (verdict === "give-up") break;
    }
    this.logger.warn(
      { url: target.url, rule: notification.rule, delivery: id },
      "webhook notification not delivered",
    );
    this.options.onOutcome?.("failed");
  }

  private async send(target: WebhookTarget, body: string, id: string, attempt: number) {
    const headers: Record<string, string> = { "content-type": "application/json", [DELIVERY_HEADER]: id };
    try {
      if (target.secretRef) {
        const secret = await this.options.secretOf(target.secretRef);
        if (secret === undefined) {
          const { namespace, name, key } = target.secretRef;
          this.logger.warn(
            { url: target.url, secret: `${namespace}/${name}`, key },
            "webhook secret missing: retrying",
          );
          return "retry";
        }
        headers[SIGNATURE_HEADER] = signBody(secret, body);
      }
      const response = await fetch(target.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs ?? 10_000), this.stopped.signal]),
      });
      await response.body?.cancel();
      if (response.ok) return "ok";
      this.logger.warn(
        { url: target.url, status: response.status, attempt },
        "webhook refused a notification",
      );
      // A 4xx other than 408/429 will not change by sending the same body again.
      const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
      return retryable ? "retry" : "give-up";
    } catch (err) {
      this.logger.warn({ url: target.url, attempt, err: describeError(err) }, "webhook unreachable");
      return "retry";
    }
  }
}
