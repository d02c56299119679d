/**
 * Classifies errors coming out of @kubernetes/client-node. Its typed and object APIs throw
 * `ApiException` (`code` = HTTP status, `body` = the response text, usually a JSON
 * `Status`); its `Watch` fails with an `Error` carrying `statusCode`; a watch stream reports
 * failures as an ERROR event whose object is a `Status` (`{ kind: "Status", code, reason }`).
 */

export interface KubeStatus {
  code?: number;
  reason?: string;
  message?: string;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

function asHttpStatus(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 100 && value <= 599
    ? value
    : undefined;
}

/** The `Status` object carried by an error or by a watch ERROR event, if any. */
export function statusOf(err: unknown): KubeStatus | undefined {
  if (!isRecord(err)) return undefined;
  if (err.kind === "Status") return err as KubeStatus;
  let body = err.body;
  if (typeof body === "string") {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  if (isRecord(body) && (body.kind === "Status" || "reason" in body || "code" in body))
    return body as KubeStatus;
  return undefined;
}

/** HTTP status of a Kubernetes API failure, or undefined for transport errors (ECONNRESET, aborts, ...). */
export function statusCode(err: unknown): number | undefined {
  if (!isRecord(err)) return undefined;
  // `code` is also used by Node for strings such as "ECONNREFUSED"; only numbers are HTTP statuses.
  return asHttpStatus(err.code) ?? asHttpStatus(err.statusCode) ?? asHttpStatus(statusOf(err)?.code);
}

/** Machine-readable reason from the Status body ("NotFound", "AlreadyExists", "Conflict", "Expired", ...). */
export function statusReason(err: unknown): string | undefined {
  return statusOf(err)?.reason;
}

export function isNotFound(err: unknown): boolean {
  return statusCode(err) === 404;
}

/**
 * What a call resolves to, or undefined when its object is not there (404): a read of something
 * that may be absent, or a delete of something already gone. Any other failure still throws.
 */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Optimistic-concurrency failure (stale resourceVersion); "AlreadyExists" is a 409 too but not a conflict. */
export function isConflict(err: unknown): boolean {
  return statusCode(err) === 409 && statusReason(err) !== "AlreadyExists";
}

export function isAlreadyExists(err: unknown): boolean {
  return statusCode(err) === 409 && statusReason(err) === "AlreadyExists";
}

/** The requested resourceVersion is too old to watch or list from: the caller has to relist. */
export function isGone(err: unknown): boolean {
  return statusCode(err) === 410;
}

/**
 * Node's fetch (undici, which client-node 2.x uses) reports every transport failure as
 * `TypeError: fetch failed` and keeps what happened in `cause` (often nested once more).
 * The innermost cause is the one that names the errno and the address.
 */
export function rootCause(err: unknown): unknown {
  let current = err;
  for (let depth = 0; depth < 5; depth++) {
    const next = isRecord(current) ? current.cause : undefined;
    if (!isRecord(next)) return current;
    current = next;
  }
  return current;
}

const TRANSPORT_CODES =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE|ENOTFOUND|EAI_AGAIN|UND_ERR_\w+)$/;

/**
 * The request never got an HTTP answer: refused, reset, timed out, aborted, unresolvable.
 * Such failures are worth retrying; an HTTP status (even 5xx) is an answer.
 */
export function isTransportError(err: unknown): boolean {
  if (statusCode(err) !== undefined) return false;
  for (let current: unknown = err, depth = 0; isRecord(current) && depth < 6; depth++) {
    const e = current as { name?: unknown; code?: unknown; type?: unknown; message?: unknown };
    if (e.name === "AbortError" || e.name === "TimeoutError" || e.type === "system" || e.type === "aborted")
      return true;
    if (typeof e.code === "string" && TRANSPORT_CODES.test(e.code)) return true;
    if (
      typeof e.message === "string" &&
      /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|socket hang up|other side closed|aborted|timed? ?out|fetch failed/i.test(
        e.message,
      )
    )
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * A one-line description for logs. ApiException's own message embeds all response headers,
 * which is noise; the Status message is what a person needs.
 */
export function describeError(err: unknown): string {
  const code = statusCode(err);
  const status = statusOf(err);
  if (code !== undefined) {
    const detail = status?.message ?? (status?.reason || undefined);
    return detail ? `HTTP ${code}: ${detail}` : `HTTP ${code}`;
  }
  if (err instanceof Error) {
    const root = rootCause(err);
    // "fetch failed" alone does not say what failed; the cause does ("connect ECONNREFUSED 127.0.0.1:6443").
    if (root !== err && root instanceof Error && root.message && !err.message.includes(root.message))
      return `${err.message}: ${root.message}`;
    return err.message;
  }
  return String(err);
}
