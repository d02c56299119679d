import type { Server } from "node:https";

/**
 * Swaps the certificate an HTTPS server presents: new connections get it, open ones finish with the
 * old one, nothing restarts. A server that asks clients for certificates keeps trusting `clientCaPem`
 * (the CA belongs to the secure context being replaced).
 */
export function replaceServingCertificate(
  server: unknown,
  pair: { certPem: string; keyPem: string },
  clientCaPem?: string,
): void {
  (server as Server).setSecureContext({
    cert: pair.certPem,
    key: pair.keyPem,
    ...(clientCaPem ? { ca: clientCaPem } : {}),
  });
}
