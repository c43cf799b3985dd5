/** Loader hooks of count-modules.mjs: reports each module URL Node loads to the main thread. */
let port;

export function initialize(data) {
  port = data.port;
}

export async function load(url, context, nextLoad) {
  port.postMessage(url);
  return nextLoad(url, context);
}
