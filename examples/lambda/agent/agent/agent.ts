/**
 * A tiny eve agent on eve-world-aws. `mockModel` keeps the example free of API keys; swap in a
 * real model (and pass its key through `hostEnvironment`) for anything beyond a smoke test.
 */
import { defineAgent } from "eve";
import { mockModel } from "eve/evals";

export default defineAgent({
  model: mockModel({
    modelId: "lambda-echo",
    provider: "eve-world-aws-example",
    respond: ({ lastUserMessage }) => `You said: ${lastUserMessage ?? ""}`,
  }),
  experimental: {
    workflow: {
      world: "@portfolio/eve-world-aws",
    },
  },
});
