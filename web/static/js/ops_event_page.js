// The entry point of a console page (no inline script: the pages' CSP is script-src 'self').
import { initEventPage } from "./ops_event.js";

initEventPage();
