// Drives the AI SDK's own chat (AbstractChat: what useChat wraps) against served vercel-ui
// streams, and prints the request bodies it sent and the UI messages it holds.
//
// argv[2] is JSON: {"streams": [url, ...], "steps": [...]}. A step is {"text": "..."} (the user
// sends a message) or {"toolOutput": "..."} (every tool part waiting for its output gets it,
// then the chat sends again, as `sendAutomaticallyWhen` would). The n-th request the chat makes
// reads the n-th stream URL (GET); a request past the last URL gets an empty answer.
import { DefaultChatTransport } from "ai";
import { Chat } from "./chat_state.mjs";

const { streams, steps } = JSON.parse(process.argv[2]);
const bodies = [];
const transport = new DefaultChatTransport({
  api: "http://127.0.0.1:9/api/chat", // never reached: fetch below answers
  fetch: async (_url, init) => {
    bodies.push(JSON.parse(init.body));
    const stream = streams[bodies.length - 1];
    if (stream !== undefined) return fetch(stream);
    const empty = 'data: {"type":"start"}\n\ndata: {"type":"finish"}\n\ndata: [DONE]\n\n';
    return new Response(empty, {
      headers: { "content-type": "text/event-stream", "x-vercel-ai-ui-message-stream": "v1" },
    });
  },
});
const errors = [];
const chat = new Chat({ transport, onError: (error) => errors.push(String(error)) });
for (const step of steps) {
  if (step.text !== undefined) {
    await chat.sendMessage({ text: step.text });
    continue;
  }
  const last = chat.messages[chat.messages.length - 1];
  for (const part of last.parts) {
    if (part.type.startsWith("tool-") && part.state === "input-available") {
      await chat.addToolResult({
        tool: part.type.slice(5),
        toolCallId: part.toolCallId,
        output: step.toolOutput,
      });
    }
  }
  await chat.sendMessage();
}
process.stdout.write(JSON.stringify({ bodies, messages: chat.messages, errors }));
