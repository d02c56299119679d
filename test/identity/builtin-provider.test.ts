import { after } from "node:test";
import { uniqueName } from "../support/clusters.js";
import { stopSharedBuiltinIdentity } from "../support/identity.js";
import { builtinIssuedTokens } from "./builtin-tokens.js";
import { type ConformanceUser, identityProviderConformance } from "./provider-conformance.js";

const tenant = uniqueName("blt");
const admin: ConformanceUser = {
  username: uniqueName("ada"),
  password: "ada-secret-1",
  tenant,
  groups: ["developers", "auditors"],
  tenantAdmin: true,
};
const member: ConformanceUser = {
  username: uniqueName("ben"),
  password: "ben-secret-1",
  tenant,
  groups: ["developers"],
  tenantAdmin: false,
};

identityProviderConformance("builtin", () => {
  const tokens = builtinIssuedTokens([admin, member]);
  return {
    ...tokens,
    get provider() {
      return tokens.issuer();
    },
    admin,
    member,
    passwordLogin: true,
    revoke: (t) => tokens.issuer().revoke(t),
  };
});

after(() => stopSharedBuiltinIdentity());
