// A user's process as the README writes it, configured from the environment only
// (test/integration/preflight/aws-environment.test.ts): `createWorld()` from dist/, then
//   `app`     world.start(), as an app that consumes the queue does;
//   `script`  setWorld(world) and core's start() of a workflow by its id, as a script or an HTTP
//             route does (it never calls world.start());
//   `resume`  setWorld(world) and core's resumeHook() (its first call is a read: the token).
// Nothing catches the error: the process dies of it as the user's would (Node prints it, exit 1).
// On exit it prints `elapsed <ms>` (from just before the call) on stdout.
//
// argv: <World entry URL (dist/src/index.js)> <app|script|resume>
const [distUrl, mode] = process.argv.slice(2);
if (!distUrl || !['app', 'script', 'resume'].includes(mode)) {
  console.error('usage: script-child.mjs <dist URL> <app|script|resume>');
  process.exit(2);
}
const { createWorld } = await import(distUrl);
const world = createWorld();
const t0 = performance.now();
process.on('exit', () => process.stdout.write(`elapsed ${Math.round(performance.now() - t0)}\n`));
if (mode === 'app') {
  await world.start();
} else {
  const [{ setWorld }, { start, resumeHook }] = await Promise.all([import('workflow/runtime'), import('workflow/api')]);
  setWorld(world);
  if (mode === 'script') {
    const run = await start({ workflowId: 'workflow//./workflows/order//order' }, [{ id: 42 }]);
    process.stdout.write(`started ${run.runId}\n`);
  } else {
    const hook = await resumeHook('approval-42', { approved: true });
    process.stdout.write(`started ${hook.runId}\n`);
  }
}
await world.close();
