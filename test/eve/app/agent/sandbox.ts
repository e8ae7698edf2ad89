/**
 * Pin the sandbox to just-bash (a pure-JavaScript shell over a virtual file system). eve's default
 * picks Docker or microsandbox when the host has a Docker daemon or /dev/kvm, and `eve build` then
 * fails without the `microsandbox` package; pinned, the test runs the same on every host, and the
 * same as inside AWS Lambda (no KVM, no Docker there, so the default resolves to just-bash anyway).
 */
import { defineSandbox } from 'eve/sandbox';
import { JustBashSandbox } from 'eve/sandbox/just-bash';

// eve 0.80.1 needs the environment as a named export (docs/sandbox/just-bash.mdx).
export const environment = JustBashSandbox.environment({ autoInstall: false });
export default defineSandbox(() => environment.open());
