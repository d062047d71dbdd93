export { EtcdBackend } from './backend.js';
export { isEtcdInput, parseEtcdUrl, type EtcdClient, type EtcdInput } from './store.js';
