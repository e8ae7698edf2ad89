/**
 * The eve end-to-end fixture agent: a deterministic `mockModel` (no API key), one tool (`add`),
 * and the eve-world-aws World. Every user message produces exactly one turn of the shape
 *   model -> add(a, b) -> model -> "The sum is N."
 * The two numbers are the first two integers in the message; the word "slow" asks the tool to
 * hold its first execution so the test can kill the process mid-turn.
 */
import { defineAgent } from 'eve';
import { mockModel } from 'eve/evals';

function numbersIn(text: string): [number, number] {
  const found = (text.match(/-?\d+/g) ?? []).map(Number);
  return [found[0] ?? 0, found[1] ?? 0];
}

function sumOf(output: unknown): string {
  // The normalized output shape is eve's business; find the number either way.
  const m = JSON.stringify(output ?? null).match(/"sum":\s*(-?\d+)/);
  return m ? m[1] : 'unknown';
}

export default defineAgent({
  model: mockModel({
    modelId: 'e2e-adder',
    provider: 'eve-world-aws-e2e',
    respond: ({ userMessageCount, toolResults, lastUserMessage }) => {
      const text = lastUserMessage ?? '';
      // One tool call per user message: call it until this turn's result is in the prompt.
      if (toolResults.length < userMessageCount) {
        const [a, b] = numbersIn(text);
        return { toolCalls: [{ name: 'add', input: { a, b, slow: /\bslow\b/i.test(text) } }] };
      }
      return `The sum is ${sumOf(toolResults[toolResults.length - 1]?.output)}.`;
    },
  }),
  experimental: {
    workflow: {
      world: '@portfolio/eve-world-aws',
    },
  },
});
