// The non-React core of the docs' useChat example (AbstractChat: what useChat wraps), against
// our app: a DefaultChatTransport whose POST starts a run and reads its stream, whose reconnect
// reads GET /streams/{id}?protocol=vercel-ui, and a Stop that calls stop() and DELETEs the run.
//
// argv[2] is JSON: {"base": url, "streamId": id, "mode": "resume" | "stop", "messages": [...]}.
// "resume": a chat holding `messages` (as after a page reload) calls resumeStream().
// "stop": the chat sends "Hello?", and once answer text shows, stops. Prints the messages.
import { DefaultChatTransport } from "ai";
import { Chat } from "./chat_state.mjs";

const { base, streamId, mode, messages } = JSON.parse(process.argv[2]);
const streamUrl = `${base}/streams/${streamId}`;

// What the docs' component builds, word for word but for useChat itself.
const transport = new DefaultChatTransport({
  api: streamUrl,
  prepareSendMessagesRequest: ({ messages }) => ({
    body: { prompt: messages.at(-1).parts.map((part) => part.text ?? "").join("") },
  }),
  // POST starts the run (202); its answer is the stream, read with GET.
  fetch: async (url, init) => {
    const started = await fetch(url, init);
    if (init?.method !== "POST" || !started.ok) return started;
    return fetch(`${url}?protocol=vercel-ui`, { signal: init.signal });
  },
  prepareReconnectToStreamRequest: () => ({ api: `${streamUrl}?protocol=vercel-ui` }),
});

const errors = [];
const chat = new Chat({ id: streamId, messages, transport, onError: (e) => errors.push(String(e)) });
const stop = async () => {
  await chat.stop();
  const response = await fetch(streamUrl, { method: "DELETE" });
  return response.status;
};

let deleted = null;
if (mode === "resume") {
  await chat.resumeStream();
} else {
  const sending = chat.sendMessage({ text: "Hello?" });
  const answered = () => {
    const last = chat.messages.at(-1);
    return last?.role === "assistant" && last.parts.some((p) => p.type === "text" && p.text);
  };
  for (let waited = 0; !answered() && waited < 10000; waited += 20) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  deleted = await stop();
  await sending;
}
process.stdout.write(
  JSON.stringify({ messages: chat.messages, status: chat.status, deleted, errors }),
);
