// Types `import { exports } from "cloudflare:workers"` with this Worker's own exports.
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("./workers/index");
  }
}
