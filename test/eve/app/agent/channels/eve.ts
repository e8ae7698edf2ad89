/** The default eve HTTP channel, open: the test server listens on 127.0.0.1 only. */

import { none } from 'eve/channels/auth';
import { eveChannel } from 'eve/channels/eve';

export default eveChannel({
  auth: [none()],
});
