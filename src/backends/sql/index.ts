/**
 * `SqlLock`, for PostgreSQL (pg), MySQL/MariaDB (mysql2) and SQLite (better-sqlite3).
 *
 * @module gcp-pubsub-idempotency/sql
 */

export * from "./lock.js";
