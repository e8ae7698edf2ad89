/**
 * eve's HTTP API behind HTTP Basic auth: the Function URL is public, so the agent is not.
 * AGENT_USER / AGENT_PASSWORD come from the host function's environment (`hostEnvironment`).
 */
import { httpBasic } from "eve/channels/auth";
import { eveChannel } from "eve/channels/eve";

export default eveChannel({
  auth: [httpBasic({ username: process.env.AGENT_USER ?? "", password: process.env.AGENT_PASSWORD ?? crypto.randomUUID() })],
});
