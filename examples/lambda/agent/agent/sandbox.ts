/**
 * Inside AWS Lambda there is no KVM and no Docker daemon, so eve's default sandbox resolves to
 * just-bash (a pure-JavaScript shell over a virtual file system: no native processes, no network
 * isolation). Pinning it here makes `eve build` on your machine (which may have Docker or
 * /dev/kvm) produce the same app that runs in Lambda.
 */
import { defineSandbox } from "eve/sandbox";
import { JustBashSandbox } from "eve/sandbox/just-bash";

// eve 0.80.1 needs the environment as a named export (docs/sandbox/just-bash.mdx).
export const environment = JustBashSandbox.environment({ autoInstall: false });
export default defineSandbox(() => environment.open());
