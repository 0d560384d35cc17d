// The entry point of a console page (no inline script: the pages' CSP is script-src 'self').
import { initSignin } from "./ops.js";

initSignin();
