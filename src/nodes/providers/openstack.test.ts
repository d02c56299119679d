import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { V1Secret } from "@kubernetes/client-node";
import {
  clusterTag,
  compareMicroversions,
  errorMessage,
  MAX_MICROVERSION,
  negotiateMicroversion,
} from "./openstack.js";
import { credentialsFromSecret } from "./registry.js";
import { ProviderError } from "./spi.js";

describe("Nova microversions", () => {
  it("compare as numbers, not as text", () => {
    assert.ok(compareMicroversions("2.9", "2.52") < 0);
    assert.ok(compareMicroversions("2.100", "2.96") > 0);
    assert.equal(compareMicroversions("2.52", "2.52"), 0);
  });

  it("are negotiated to the newest both sides speak", () => {
    assert.equal(negotiateMicroversion({ version: "2.93", min_version: "2.1" }, "u"), "2.93");
    assert.equal(negotiateMicroversion({ version: "2.52", min_version: "2.1" }, "u"), "2.52");
    assert.equal(negotiateMicroversion({ version: "2.120", min_version: "2.1" }, "u"), MAX_MICROVERSION);
  });

  it("refuse a Nova too old for tags at creation, or one without microversions, saying why", () => {
    assert.throws(
      () => negotiateMicroversion({ version: "2.37", min_version: "2.1" }, "http://nova/v2.1"),
      (err: unknown) =>
        err instanceof ProviderError &&
        err.permanent &&
        err.message ===
          "Nova at http://nova/v2.1 supports microversions up to 2.37; tenantry needs 2.52 or newer",
    );
    assert.throws(() => negotiateMicroversion({ version: "" }, "u"), /supports no microversions/);
    assert.throws(
      () => negotiateMicroversion({ version: "3.5", min_version: "3.0" }, "u"),
      /supports microversions from 3\.0/,
    );
  });
});

describe("OpenStack errors and tags", () => {
  it("reads the message of every error body shape", () => {
    assert.equal(
      errorMessage({ badRequest: { message: "Invalid flavorRef", code: 400 } }),
      "Invalid flavorRef",
    );
    assert.equal(
      errorMessage({ error: { message: "The request you have made requires authentication.", code: 401 } }),
      "The request you have made requires authentication.",
    );
    assert.equal(
      errorMessage({ NeutronError: { message: "Network not found", type: "NetworkNotFound" } }),
      "Network not found",
    );
    assert.equal(errorMessage({ message: "plain" }), "plain");
    assert.equal(errorMessage("text"), undefined);
  });

  it("tags fit Nova's 60 characters", () => {
    assert.ok(clusterTag("0b29132e-c406-6a32-8f1e-000000000000").length <= 60);
  });
});

describe("credentials Secrets", () => {
  const secret = (data: Record<string, string>): V1Secret => ({
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  });

  it("hold an application credential, or a password with its project", () => {
    assert.deepEqual(
      credentialsFromSecret(
        secret({ application_credential_id: "i", application_credential_secret: "s" }),
        "S",
      ),
      {
        kind: "applicationCredential",
        id: "i",
        secret: "s",
      },
    );
    assert.deepEqual(
      credentialsFromSecret(secret({ username: "u", password: "p\n", project_name: "pr" }), "S"),
      {
        kind: "password",
        username: "u",
        password: "p",
        projectName: "pr",
        userDomainName: "Default",
        projectDomainName: "Default",
      },
    );
  });

  it("name what is missing", () => {
    assert.throws(
      () => credentialsFromSecret(secret({ username: "u" }), "Secret tenantry-system/os"),
      /Secret tenantry-system\/os needs .* \(missing: password, project_name\)/,
    );
    assert.throws(
      () => credentialsFromSecret(secret({ application_credential_id: "i" }), "S"),
      /S has only one of application_credential_id and application_credential_secret/,
    );
  });
});
