import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import {
  AuthenticationError,
  IdentityProviderUnavailable,
  KeystoneIdentityProvider,
  type KeystoneProviderOptions,
  tenantNameFor,
} from "../../src/identity/index.js";
import { freePort } from "../../src/localcluster/index.js";
import type { KeystoneProject, KeystoneUser, RunningKeystone } from "../support/keystone.js";
import { startKeystone } from "../support/keystone.js";
import { type ConformanceUser, identityProviderConformance } from "./provider-conformance.js";

const PROJECT = "Blue Team";

let keystone: RunningKeystone;
let project: KeystoneProject;
let provider: KeystoneIdentityProvider;
const accounts = new Map<string, KeystoneUser>();

function serviceOptions(overrides: Partial<KeystoneProviderOptions> = {}): KeystoneProviderOptions {
  return { url: keystone.url, service: { ...keystone.service }, timeoutMs: 10_000, ...overrides };
}

before(async () => {
  keystone = await startKeystone();
  project = await keystone.createProject(PROJECT);
  for (const [name, role] of [
    ["kadmin", "admin"],
    ["kmember", "member"],
  ] as const) {
    const user = await keystone.createUser({ name, password: `${name}-pw-4f9c`, defaultProject: project });
    await keystone.assignRole(user, project, role);
    accounts.set(name, user);
  }
  provider = new KeystoneIdentityProvider(serviceOptions());
});

after(async () => {
  await keystone?.stop();
});

function account(user: ConformanceUser): KeystoneUser {
  const found = accounts.get(user.username);
  if (!found) throw new Error(`no Keystone user ${user.username}`);
  return found;
}

/** Changes characters in the middle of a real token: still Fernet-shaped, but its signature no longer matches. */
function tamper(token: string): string {
  const chars = [...token];
  const middle = Math.floor(chars.length / 2);
  for (let i = middle; i < middle + 4; i++) chars[i] = chars[i] === "A" ? "B" : "A";
  return chars.join("");
}

identityProviderConformance("keystone", () => ({
  provider,
  admin: {
    username: "kadmin",
    password: "kadmin-pw-4f9c",
    tenant: tenantNameFor(PROJECT),
    groups: [`keystone:project:${PROJECT}`, "keystone:role:admin", "keystone:role:member"],
    tenantAdmin: true,
  },
  member: {
    username: "kmember",
    password: "kmember-pw-4f9c",
    tenant: tenantNameFor(PROJECT),
    groups: [`keystone:project:${PROJECT}`, "keystone:role:member"],
    tenantAdmin: false,
  },
  tokenFor: (user) => keystone.passwordToken(account(user), project),
  expiredToken: (user) => keystone.expiredToken(account(user), project),
  forgedToken: async (user) => tamper(await keystone.passwordToken(account(user), project)),
  revoke: (token) => provider.revoke(token),
  passwordLogin: true,
  usernamePrefix: "keystone:",
}));

describe("keystone identity provider", () => {
  it("recognizes Fernet tokens and leaves JWTs to other providers", async () => {
    const token = await keystone.passwordToken(accounts.get("kmember")!, project);
    assert.ok(provider.recognizes(token));
    assert.ok(provider.recognizes(tamper(token)));
    assert.equal(provider.recognizes("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"), false);
    assert.equal(provider.recognizes(`${token}.${token}.${token}`), false);
    assert.equal(provider.recognizes("gAAAAA"), false);
  });

  it("names users of other domains user@domain", async () => {
    const domain = await keystone.createDomain("Red Org");
    const ops = await keystone.createProject("ops", domain);
    const rita = await keystone.createUser({
      name: "rita",
      password: "rita-pw-77",
      domain,
      defaultProject: ops,
    });
    await keystone.assignRole(rita, ops, "member");

    const issued = await provider.login({ username: "rita", password: "rita-pw-77", domain: "Red Org" });
    assert.equal(issued.identity.username, "keystone:rita@Red Org");
    assert.equal(issued.identity.uid, rita.id);
    assert.equal(issued.identity.tenant, "ops");
    assert.equal(issued.identity.tenantAdmin, false);

    const result = await provider.authenticate(await keystone.passwordToken(rita, ops));
    assert.ok(result.authenticated);
    assert.equal(result.identity.username, "keystone:rita@Red Org");
    assert.deepEqual(
      [...result.identity.groups].sort(),
      ["keystone:project:ops", "keystone:role:member", "keystone:role:reader"].sort(),
    );
    // The same name in the Default domain is someone else.
    await assert.rejects(provider.login({ username: "rita", password: "rita-pw-77" }), AuthenticationError);
  });

  it("scopes a login to the project asked for, and refuses a project the user has no role on", async () => {
    const other = await keystone.createProject("Green Team");
    const kadmin = accounts.get("kadmin")!;
    await keystone.assignRole(kadmin, other, "member");

    const issued = await provider.login({
      username: "kadmin",
      password: "kadmin-pw-4f9c",
      tenant: "Green Team",
    });
    assert.equal(issued.identity.tenant, tenantNameFor("Green Team"));
    assert.equal(issued.identity.tenantAdmin, false, "kadmin is only a member of Green Team");
    assert.ok(issued.identity.groups.includes("keystone:project:Green Team"));

    await assert.rejects(
      provider.login({ username: "kmember", password: "kmember-pw-4f9c", tenant: "Green Team" }),
      (error: Error) => error instanceof AuthenticationError && /Green Team/.test(error.message),
    );
  });

  it("puts a user with no project in no tenant", async () => {
    await keystone.createUser({ name: "drifter", password: "drifter-pw-1" });
    const issued = await provider.login({ username: "drifter", password: "drifter-pw-1" });
    assert.equal(issued.identity.username, "keystone:drifter");
    assert.equal(issued.identity.tenant, undefined);
    assert.equal(issued.identity.tenantAdmin, false);
    assert.deepEqual(issued.identity.groups, []);
    const result = await provider.authenticate(issued.token);
    assert.ok(result.authenticated);
    assert.equal(result.identity.tenant, undefined);
  });

  it("signs in again when Keystone revokes its own service token", async () => {
    const serviceProject = await keystone.createProject("service-2");
    const service = await keystone.createUser({
      name: "tenantry-2",
      password: "svc2-pw-9",
      defaultProject: serviceProject,
    });
    await keystone.assignRole(service, serviceProject, "service");
    const own = new KeystoneIdentityProvider(
      serviceOptions({ service: { username: "tenantry-2", password: "svc2-pw-9", project: "service-2" } }),
    );
    const token = await keystone.passwordToken(accounts.get("kmember")!, project);
    assert.ok((await own.authenticate(token)).authenticated);

    // Disabling a user revokes its tokens; re-enabled, it may sign in again.
    await keystone.setUserEnabled(service, false);
    await keystone.setUserEnabled(service, true);
    // Keystone's revocation events have one-second resolution: a token issued in the same second is revoked too.
    await sleep(1100);
    const result = await own.authenticate(token);
    assert.ok(result.authenticated, `refused: ${!result.authenticated && result.reason}`);
  });

  it("fails loudly, not with a no, when Keystone cannot be reached", async () => {
    const token = await keystone.passwordToken(accounts.get("kmember")!, project);
    const closed = `http://127.0.0.1:${await freePort()}/v3`;
    const offline = new KeystoneIdentityProvider(serviceOptions({ url: closed }));
    await assert.rejects(
      offline.authenticate(token),
      (error: Error) => error instanceof IdentityProviderUnavailable && error.message.includes(closed),
    );
    await assert.rejects(
      offline.login({ username: "kmember", password: "kmember-pw-4f9c" }),
      IdentityProviderUnavailable,
    );
  });

  it("gives up on a Keystone that does not answer within the timeout", async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const address = silent.address();
      assert.ok(address && typeof address === "object");
      const hung = new KeystoneIdentityProvider(
        serviceOptions({ url: `http://127.0.0.1:${address.port}/v3`, timeoutMs: 300 }),
      );
      const token = await keystone.passwordToken(accounts.get("kmember")!, project);
      const started = Date.now();
      await assert.rejects(
        hung.authenticate(token),
        (error: Error) => error instanceof IdentityProviderUnavailable && /within 300 ms/.test(error.message),
      );
      assert.ok(Date.now() - started < 5000, "gave up promptly");
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("says so when its service credentials are wrong or lack the service role", async () => {
    const token = await keystone.passwordToken(accounts.get("kmember")!, project);
    const wrong = new KeystoneIdentityProvider(
      serviceOptions({ service: { ...keystone.service, password: "not-the-password" } }),
    );
    await assert.rejects(
      wrong.authenticate(token),
      (error: Error) =>
        error instanceof IdentityProviderUnavailable &&
        /refused the service user "tenantry"/.test(error.message),
    );

    const weak = new KeystoneIdentityProvider(
      serviceOptions({ service: { username: "kmember", password: "kmember-pw-4f9c", project: PROJECT } }),
    );
    const other = await keystone.passwordToken(accounts.get("kadmin")!, project);
    await assert.rejects(
      weak.authenticate(other),
      (error: Error) => error instanceof IdentityProviderUnavailable && /service role/.test(error.message),
    );
  });

  it("revokes a token only once, quietly", async () => {
    const issued = await provider.login({ username: "kmember", password: "kmember-pw-4f9c" });
    await provider.revoke(issued.token);
    await provider.revoke(issued.token);
    await provider.revoke("not-a-token");
    assert.equal((await provider.authenticate(issued.token)).authenticated, false);
  });
});
