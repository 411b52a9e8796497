// Which copies of libjpeg and libpng the engine's calls reach (image_decode_libraries.cpp).
#pragma once
#include <map>
#include <string>

namespace penstock {

// The files that the engine and its libjpeg and libpng functions were loaded from.
std::map<std::string, std::string> image_libraries();

// Why libjpeg's or libpng's functions are not the engine's private copies (penstock/_libs), or
// "" when they are: the engine refuses to import rather than decode with another library.
std::string interposed_image_library();

}  // namespace penstock
