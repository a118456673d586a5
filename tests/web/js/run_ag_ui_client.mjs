// Replays an AG-UI event stream (SSE bytes on stdin) through @ag-ui/client's own agent: its
// event verification and its reducer build the messages, as a browser's agent would. argv[2]
// is the JSON of the messages the agent held before the run; prints the messages after it.
import { AbstractAgent } from "@ag-ui/client";
import { Observable } from "rxjs";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const events = Buffer.concat(chunks)
  .toString("utf8")
  .split("\n\n")
  .map((block) => block.split("\n").filter((line) => line.startsWith("data: ")))
  .filter((lines) => lines.length > 0)
  .map((lines) => JSON.parse(lines.map((line) => line.slice(6)).join("\n")));

class ReplayAgent extends AbstractAgent {
  run() {
    return new Observable((subscriber) => {
      for (const event of events) subscriber.next(event);
      subscriber.complete();
    });
  }
}

const agent = new ReplayAgent({ initialMessages: JSON.parse(process.argv[2] ?? "[]") });
const errors = [];
try {
  await agent.runAgent();
} catch (error) {
  errors.push(String(error));
}
process.stdout.write(JSON.stringify({ messages: agent.messages, errors }));
