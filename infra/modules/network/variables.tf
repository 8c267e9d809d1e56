variable "project_id" {
  type = string
}

variable "region" {
  type = string
}

variable "name" {
  description = "Name of the VPC network; prefixes its subnet and peering range."
  type        = string
}

variable "connector_name" {
  description = "Serverless VPC Access connector name (at most 25 characters)."
  type        = string

  validation {
    condition     = can(regex("^[a-z][-a-z0-9]{0,23}[a-z0-9]$", var.connector_name))
    error_message = "connector_name: lowercase letters, digits and dashes, 2 to 25 characters."
  }
}

variable "connector_cidr" {
  description = "Unused /28 range for the connector's subnet."
  type        = string
  default     = "10.8.0.0/28"
}

variable "connector_machine_type" {
  type    = string
  default = "e2-micro"
}

variable "connector_min_instances" {
  type    = number
  default = 2
}

variable "connector_max_instances" {
  type    = number
  default = 3
}
