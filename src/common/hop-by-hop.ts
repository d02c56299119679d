/**
 * The headers a reverse proxy keeps on their hop (RFC 9110 §7.6.1), shared by the tenant gateway
 * and the runtimes proxy: they describe one connection, not the message, and are never forwarded.
 */
export const HOP_BY_HOP_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "expect",
  "http2-settings",
]);

/** Connection tokens that are options rather than header names. */
const CONNECTION_OPTIONS = new Set(["keep-alive", "close", "upgrade"]);

/**
 * Header names a Connection header lists (`Connection: close, X-Secret` names x-secret): hop-by-hop
 * for this message too. Added to `into` when given; undefined when there are none.
 */
export function connectionListed(value: string | undefined, into?: Set<string>): Set<string> | undefined {
  let listed = into;
  for (const token of value?.split(",") ?? []) {
    const name = token.trim().toLowerCase();
    if (!name || CONNECTION_OPTIONS.has(name)) continue;
    listed = listed ?? new Set();
    listed.add(name);
  }
  return listed;
}
