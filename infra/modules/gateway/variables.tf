variable "project_id" {
  type = string
}

variable "region" {
  description = "Region of the function and the Cloud Run service."
  type        = string
}

variable "name" {
  description = "Prefix of the load balancer's resources."
  type        = string
}

variable "domains" {
  description = "Domains of the managed certificate; their DNS A records point at the output address."
  type        = list(string)
}

variable "api_function_name" {
  type = string
}

variable "live_service_name" {
  type = string
}
