/**
 * The whole deployment of the agent in ./agent: one stack, one construct. Nothing in it is always
 * on (Lambda, on-demand DynamoDB, SQS, S3, Scheduler), so an idle stack costs storage only.
 *
 *   npm ci && npm run synth     # offline: no AWS credentials, no Docker
 *   npm run deploy              # eve build + cdk deploy (needs credentials and Docker)
 */
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';

// In this repository the package comes from ../.. (file: dependency): it must be built first.
const { EveWorldAws } = await import('@portfolio/eve-world-aws/cdk').catch((err) => {
  console.error('Cannot load @portfolio/eve-world-aws/cdk. In a clone of the repository run `npm ci && npm run build` at its root first.');
  throw err;
});

const app = new App();
// No `env`: the stack is environment-agnostic, so synth needs no credentials or lookups.
const stack = new Stack(app, 'EveAgentOnLambda', {
  description: 'eve agent on AWS Lambda (eve-world-aws)',
});

new EveWorldAws(stack, 'Agent', {
  // The eve app: its Dockerfile (hostDockerfile()) and `.output/` from `eve build`.
  app: fileURLToPath(new URL('./agent', import.meta.url)),
  // Example setting: no deletion protection on the table. `cdk destroy` still RETAINS the table
  // and the payload bucket (the default `removalPolicy`), so the data outlives the stack; without
  // the protection they can then be deleted by hand (see README.md). Keep protection on (the
  // default) for anything that matters.
  deletionProtection: false,
});

app.synth();
