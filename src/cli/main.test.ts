import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { describe, test } from "node:test";
import { promisify } from "node:util";
import { Command } from "commander";
import { buildProgram, COMMAND_MODULES, commandNamed } from "./main.js";

const run = promisify(execFile);
const MAIN = new URL("./main.ts", import.meta.url).pathname;

/** The CLI as a process, from its sources. */
async function cli(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, ["--import", "tsx", MAIN, ...args], { encoding: "utf8" });
  return stdout;
}

describe("the CLI's program", () => {
  test("each command module registers exactly the commands, and summaries, the program lists for it", async () => {
    for (const module of COMMAND_MODULES) {
      const program = new Command("tenantry");
      (await module.load())(program);
      const registered = Object.fromEntries(program.commands.map((c) => [c.name(), c.description()]));
      assert.deepEqual(registered, module.commands);
    }
  });

  test("only the command that runs is loaded; the others are their name and summary", async () => {
    const program = await buildProgram(["tenant", "list", "-o", "json"]);
    const tenant = program.commands.find((c) => c.name() === "tenant")!;
    assert.ok(
      tenant.commands.some((c) => c.name() === "list"),
      "tenant's own subcommands are there",
    );
    const user = program.commands.find((c) => c.name() === "user")!;
    assert.equal(user.commands.length, 0, "user is a summary only");
    const all = COMMAND_MODULES.flatMap((m) => Object.keys(m.commands));
    for (const name of [...all, "version", "completion"]) {
      assert.ok(
        program.commands.some((c) => c.name() === name),
        `${name} is listed`,
      );
    }
  });

  test("the command named is found behind help, completion requests and options", () => {
    assert.equal(commandNamed([]), undefined);
    assert.equal(commandNamed(["--help"]), undefined);
    assert.equal(commandNamed(["tenant", "list"]), "tenant");
    assert.equal(commandNamed(["help", "cloud"]), "cloud");
    assert.equal(commandNamed(["complete", "--", "runtime", "st"]), "runtime");
    assert.equal(commandNamed(["complete", "--", ""]), "");
    assert.equal(commandNamed(["completion", "bash"]), "completion");
  });

  test("shell completion: scripts for bash and zsh, and the words that can come next", async () => {
    assert.match(await cli("completion", "bash"), /complete .*tenantry/);
    assert.match(await cli("completion", "zsh"), /#compdef tenantry/);
    const commands = await cli("complete", "--", "");
    for (const name of ["tenant", "runtime", "cloud", "version", "completion"]) {
      assert.match(commands, new RegExp(`^${name}\\t`, "m"));
    }
    const tenant = await cli("complete", "--", "tenant", "");
    for (const name of ["create", "list", "describe", "usage", "delete"]) {
      assert.match(tenant, new RegExp(`^${name}\\t`, "m"));
    }
    assert.match(await cli("complete", "--", "tenant", "list", "--out"), /^--output\t/m);
  });

  test("version names the version and, running from the sources, says so", async () => {
    const { version } = JSON.parse(await cli("version", "-o", "json")) as { version: string };
    assert.match(version, /^\d+\.\d+\.\d+/);
    assert.equal((await cli("version")).trim(), `tenantry ${version} (from the TypeScript sources)`);
    assert.equal((await cli("--version")).trim(), `tenantry ${version} (from the TypeScript sources)`);
  });
});
