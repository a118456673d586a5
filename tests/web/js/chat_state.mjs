// The ai package's chat (AbstractChat: what useChat wraps) on a plain in-memory state, for the
// scripts that drive it under node.
import { AbstractChat } from "ai";

class MemoryState {
  constructor(messages) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage = (message) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [
      ...this.messages.slice(0, index),
      this.snapshot(message),
      ...this.messages.slice(index + 1),
    ];
  };
  snapshot = (value) => structuredClone(value);
}

export class Chat extends AbstractChat {
  constructor({ messages = [], ...init }) {
    super({ ...init, state: new MemoryState(messages) });
  }
}
