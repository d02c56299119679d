/**
 * How a browser in the tests comes to hold a tenantry session on the runtimes proxy: the runtimes'
 * session cookie (`tenantry-runtime-session`, an identity token), which the JupyterHub API's OAuth
 * authorize endpoint accepts as the user's credential. The one place to change when the proxy's
 * login changes.
 */
import type { BrowserContext } from "playwright-core";
import { DEFAULT_SESSION_COOKIE } from "../../src/runtimes/index.js";

export async function runtimesSession(
  context: BrowserContext,
  proxyUrl: string,
  token: string,
): Promise<void> {
  await context.addCookies([
    { name: DEFAULT_SESSION_COOKIE, value: token, url: proxyUrl, httpOnly: true, sameSite: "Lax" },
  ]);
}
