/** The default eve HTTP channel, open: the test server listens on 127.0.0.1 only. */
import { eveChannel } from "eve/channels/eve";
import { none } from "eve/channels/auth";

export default eveChannel({
  auth: [none()],
});
