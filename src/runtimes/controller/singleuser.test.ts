import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { singleUserClient, singleUserEnv } from "./singleuser.js";

const server = {
  user: "alice",
  server: "lab",
  prefix: "/r/abc/",
  apiUrl: "http://127.0.0.1:8443/hub/api",
  secretName: "lab-x-jupyterhub",
};

describe("KubeSpawner's environment for a single-user server", () => {
  const env = Object.fromEntries(singleUserEnv(server, 8888).map((e) => [e.name, e.value ?? e.valueFrom]));

  test("the API token comes from the runtime's Secret, never as a literal value", () => {
    const ref = { secretKeyRef: { name: "lab-x-jupyterhub", key: "token" } };
    assert.deepEqual(env.JUPYTERHUB_API_TOKEN, ref);
    assert.deepEqual(env.JPY_API_TOKEN, ref);
  });

  test("every variable jupyterhub-singleuser reads, as JupyterHub's Spawner sets them", () => {
    assert.equal(env.JUPYTERHUB_USER, "alice");
    assert.equal(env.JUPYTERHUB_SERVER_NAME, "lab");
    assert.equal(env.JUPYTERHUB_CLIENT_ID, "jupyterhub-user-alice-lab");
    assert.equal(env.JUPYTERHUB_API_URL, "http://127.0.0.1:8443/hub/api");
    assert.equal(env.JUPYTERHUB_ACTIVITY_URL, "http://127.0.0.1:8443/hub/api/users/alice/activity");
    assert.equal(env.JUPYTERHUB_SERVICE_PREFIX, "/r/abc/");
    assert.equal(env.JUPYTERHUB_SERVICE_URL, "http://0.0.0.0:8888/r/abc/");
    assert.equal(env.JUPYTERHUB_OAUTH_CALLBACK_URL, "/r/abc/oauth_callback");
    // The hub as the browser reaches it: under the route, where the proxy's session comes with it.
    assert.equal(env.JUPYTERHUB_BASE_URL, "/r/abc/.tenantry/");
    assert.equal(env.JUPYTERHUB_HOST, "");
    const access = JSON.stringify(["access:servers!server=alice/lab", "access:servers!user=alice"]);
    assert.equal(env.JUPYTERHUB_OAUTH_ACCESS_SCOPES, access);
    assert.equal(env.JUPYTERHUB_OAUTH_SCOPES, access);
  });

  test("its OAuth client redirects only to its own callback and grants access to that server alone", () => {
    assert.deepEqual(singleUserClient(server), {
      id: "jupyterhub-user-alice-lab",
      redirectUri: "/r/abc/oauth_callback",
      user: "alice",
      server: "lab",
      scopes: ["access:servers!server=alice/lab"],
    });
  });
});
