export { ZooKeeperBackend } from './backend.js';
export { isZooKeeperInput, parseZooKeeperUrl, type ZooKeeperClient, type ZooKeeperInput } from './store.js';
