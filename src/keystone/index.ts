/**
 * The Keystone Identity v3 client pieces shared by the Keystone identity provider (users' tokens)
 * and the OpenStack node provider (tenantry's own token for Nova and Glance): the token requests'
 * bodies, requests with a timeout that retry a connection the server had closed, the issued
 * token, and Keystone's error messages. Each caller maps failures to its own errors.
 */

/** A Keystone request got no answer: unreachable, reset, or no answer within the timeout. */
export class KeystoneUnreachable extends Error {
  override readonly name = "KeystoneUnreachable";
}

export interface KeystoneRequest {
  method: string;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs: number;
  /** Ends the request early (besides the timeout). */
  signal?: AbortSignal;
}

/**
 * A request to Keystone (or another OpenStack API) with JSON in and out. A kept-alive connection
 * the server has just closed fails at once: that is retried once on a new one; a timeout is not.
 */
export async function keystoneFetch(url: string, request: KeystoneRequest): Promise<Response> {
  const init: RequestInit = {
    method: request.method,
    headers: {
      Accept: "application/json",
      ...(request.body === undefined ? {} : { "Content-Type": "application/json" }),
      ...request.headers,
    },
    ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
  };
  for (let attempt = 1; ; attempt++) {
    const timeout = AbortSignal.timeout(request.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    try {
      return await fetch(url, { ...init, signal });
    } catch (error) {
      const gaveUp = error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
      if (attempt === 1 && !gaveUp) continue;
      throw new KeystoneUnreachable(describeFailure(error, request.timeoutMs), { cause: error });
    }
  }
}

/** Why a request got no answer, in a few words (a timeout, or the socket's error code). */
export function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer within ${timeoutMs} ms`;
  }
  const cause = error instanceof Error ? error.cause : undefined;
  if (isRecord(cause) && typeof cause.code === "string") return cause.code;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** The token Keystone issued (its X-Subject-Token header), if it sent one. */
export function subjectTokenOf(response: Response): string | undefined {
  return response.headers.get("x-subject-token") ?? undefined;
}

/** Keystone's own message of a refusal (`{"error": {"message": …}}`), else the start of the body. */
export async function keystoneMessage(response: Response): Promise<string> {
  const text = await response.text().catch(() => "");
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body) && isRecord(body.error) && typeof body.error.message === "string") {
      return body.error.message;
    }
  } catch {
    // Not JSON: a proxy's error page, say.
  }
  return text.slice(0, 200) || response.statusText;
}

/** A password token request, scoped to a project when one is named. */
export function passwordAuth(
  user: { name: string; domain: string; password: string },
  project?: { name: string; domain: string },
) {
  return {
    auth: {
      identity: {
        methods: ["password"],
        password: { user: { name: user.name, domain: { name: user.domain }, password: user.password } },
      },
      ...(project ? { scope: { project: { name: project.name, domain: { name: project.domain } } } } : {}),
    },
  };
}

/** An application credential token request (its scope is the credential's own). */
export function applicationCredentialAuth(credential: { id: string; secret: string }) {
  return {
    auth: {
      identity: {
        methods: ["application_credential"],
        application_credential: { id: credential.id, secret: credential.secret },
      },
    },
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
