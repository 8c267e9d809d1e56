variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "instance_name" {
  type = string
}

variable "database_version" {
  type    = string
  default = "POSTGRES_16"
}

variable "tier" {
  description = "Machine tier, e.g. db-custom-1-3840 (dev) or db-custom-4-16384."
  type        = string
  default     = "db-custom-1-3840"
}

variable "availability_type" {
  description = "ZONAL for dev; REGIONAL (high availability) for production."
  type        = string
  default     = "ZONAL"
}

variable "disk_size_gb" {
  type    = number
  default = 20
}

variable "max_connections" {
  description = "From the connection budget (modules/connections)."
  type        = number
}

variable "pooling" {
  description = "Managed connection pooling, from the connection budget (modules/connections)."
  type = object({
    enabled       = bool
    max_pool_size = number
  })
}

variable "runtime_accounts" {
  description = "Service account email per runtime unit (api, live, sweep): each gets an IAM database user."
  type        = map(string)
}

variable "network_id" {
  description = "VPC with private services access (network module output)."
  type        = string
}

variable "public_ip_for_proxy" {
  description = "Give the instance a public IP without authorized networks so the Cloud SQL Auth Proxy in Cloud Build's default pool can reach it. Set false when builds run in a private pool on the VPC."
  type        = bool
  default     = true
}

variable "backup_start_time" {
  type    = string
  default = "02:00"
}

variable "retained_backups" {
  type    = number
  default = 14
}

variable "transaction_log_retention_days" {
  description = "Point-in-time recovery window in days."
  type        = number
  default     = 7
}

variable "database_name" {
  type    = string
  default = "meetings"
}

variable "owner_name" {
  description = "The built-in user that owns the schema (db:apply's)."
  type        = string
  default     = "mi_owner"
}

variable "owner_url_secret_id" {
  description = "Full id of the DATABASE_OWNER_URL secret (secrets module), which receives the owner's connection string."
  type        = string
}

variable "deletion_protection" {
  type    = bool
  default = true
}
