/**
 * The test plugin (runtime-plugin.ts) as an executable: `node --import tsx runtime-plugin-exec.ts
 * <callout>`, the JSON request on standard input, the reply on standard output. A dropped
 * connection over HTTP is a crash here: exit 70 with a message on standard error.
 */
import { answerCallout } from "./runtime-plugin.js";

const chunks: Buffer[] = [];
for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
const text = Buffer.concat(chunks).toString("utf8");
const callout = process.argv.at(-1) ?? "";
const answered = await answerCallout(callout, text ? JSON.parse(text) : {}, {
  images: (process.env.TEST_PLUGIN_IMAGES ?? "example/app:1").split(","),
  cleanup: (images) => images,
});
if (!answered) {
  process.stderr.write(`the test plugin crashed in ${callout}\n`);
  process.exit(70);
}
process.stdout.write(JSON.stringify(answered.reply));
