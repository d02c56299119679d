import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  authorizationToken,
  PROXY_COOKIES,
  readCookie,
  SESSION_COOKIE,
  setCookie,
  withoutCookies,
} from "./credentials.js";

describe("runtime credentials", () => {
  test("the session cookie is read, and the proxy's cookies are left out of what the runtime receives", () => {
    assert.equal(readCookie(`a=1; ${SESSION_COOKIE}=tok; b=2`, SESSION_COOKIE), "tok");
    assert.equal(readCookie("a=1", SESSION_COOKIE), undefined);
    assert.equal(withoutCookies(`a=1; ${SESSION_COOKIE}=tok; b=2`, PROXY_COOKIES), "a=1; b=2");
    assert.equal(withoutCookies(`${SESSION_COOKIE}=tok; tenantry-runtime-state=s`, PROXY_COOKIES), undefined);
  });

  test("Bearer and JupyterHub's token schemes carry a token; others do not", () => {
    assert.equal(authorizationToken("Bearer abc"), "abc");
    assert.equal(authorizationToken("token abc"), "abc");
    assert.equal(authorizationToken("Basic YTpi"), undefined);
    assert.equal(authorizationToken(undefined), undefined);
  });

  test("cookies are HttpOnly, SameSite=Lax, for one path, Secure over TLS", () => {
    const plain = setCookie("c", "v", { path: "/r/t/", maxAgeSeconds: 5, secure: false });
    assert.equal(plain, "c=v; Path=/r/t/; Max-Age=5; HttpOnly; SameSite=Lax");
    assert.match(setCookie("c", "v", { path: "/r/t/", maxAgeSeconds: 5, secure: true }), /; Secure$/);
  });
});
