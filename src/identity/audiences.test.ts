import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_API_AUDIENCES, reviewAudiences } from "./audiences.js";

const api = DEFAULT_API_AUDIENCES;

describe("TokenReview audiences", () => {
  test("a review naming no audience is the API server's own: no audiences in the answer", () => {
    assert.deepEqual(reviewAudiences({ audiences: ["tenantry"] }, undefined, api), { valid: true });
    assert.deepEqual(reviewAudiences({ audiences: ["tenantry"] }, [], api), { valid: true });
  });

  test("answers with the audiences the token was issued for, not those it was asked about", () => {
    assert.deepEqual(reviewAudiences({ audiences: ["tenantry"] }, ["tenantry", "vault"], api), {
      valid: true,
      audiences: ["tenantry"],
    });
    assert.deepEqual(reviewAudiences({ audiences: ["tenantry"] }, [api[0]!], api), {
      valid: true,
      audiences: [api[0]],
    });
  });

  test("a token issued for other audiences is not authenticated for these", () => {
    const decision = reviewAudiences({ audiences: ["tenantry"] }, ["vault"], api);
    assert.equal(decision.valid, false);
    assert.match(
      decision.valid ? "" : decision.reason,
      /token audiences \["tenantry"\] are invalid for the target audiences \["vault"\]/,
    );
  });

  test("a token bound to no audience is valid for what is asked", () => {
    assert.deepEqual(reviewAudiences({}, ["vault"], api), { valid: true, audiences: ["vault"] });
  });
});
