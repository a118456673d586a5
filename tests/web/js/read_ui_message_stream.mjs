// Reads an AI SDK UI message stream (SSE bytes) on stdin with the `ai` package's own parser
// and readUIMessageStream, and prints the final UIMessage and the chunk types as JSON.
import { Readable } from "node:stream";
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";

const chunkTypes = [];
const chunks = parseJsonEventStream({
  stream: Readable.toWeb(process.stdin),
  schema: uiMessageChunkSchema,
}).pipeThrough(
  new TransformStream({
    transform(parsed, controller) {
      if (!parsed.success) throw parsed.error;
      chunkTypes.push(parsed.value.type);
      controller.enqueue(parsed.value);
    },
  }),
);

let message = null;
const errors = [];
for await (const snapshot of readUIMessageStream({
  stream: chunks,
  onError: (error) => errors.push(String(error)),
})) {
  message = snapshot;
}
process.stdout.write(JSON.stringify({ message, chunkTypes, errors }));
