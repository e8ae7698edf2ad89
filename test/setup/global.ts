/**
 * Starts the embedded emulator stack once per test run (free loopback ports, so parallel runs do
 * not collide) and always stops it. Test files read the endpoints with `inject('stack')`.
 */
import type { TestProject } from 'vitest/node';
import { type Stack, startStack } from '../../src/emulator/stack.js';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: { env: Record<string, string>; dynamodbPid: number };
  }
}

let stack: Stack | undefined;

export async function setup(project: TestProject) {
  stack = await startStack({ dynamodbPort: 0, awsPort: 0, startTimeoutSeconds: 60 });
  project.provide('stack', { env: stack.env, dynamodbPid: stack.dynamodbPid });
  return async () => {
    await stack?.stop();
  };
}
