/**
 * How long a server kube-apiserver calls (admission webhooks, the token and authorization
 * webhooks) keeps an idle connection open: longer than the 90 s kube-apiserver's clients keep idle
 * connections, so that the client, never the server, closes them. A server that closed first would
 * race the API server's next request on that connection, which then fails with "connection reset
 * by peer" (a POST is not retried) and the webhook's failure policy applies.
 */
export const API_SERVER_KEEP_ALIVE_MS = 120_000;
